// title: Write of text with a lone surrogate is refused cleanly
// expect: result-matches /^invalid-input/
// tools: Write

try { await put('s.txt', 'x\ud800y'); 'written' } catch (e) { e.kind }
