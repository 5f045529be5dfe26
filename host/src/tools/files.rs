//! File tools: Read, Write, Edit (placeholder until implemented).
