// title: Write of text with a lone surrogate is refused cleanly, saying why
// expect: result-matches /^invalid-input: the input of Write contains a lone surrogate/
// tools: Write

try { await put('s.txt', 'x\ud800y'); 'written' } catch (e) { e.kind + ': ' + e.message }
