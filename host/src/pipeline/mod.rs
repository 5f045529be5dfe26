//! The inner-call pipeline.
