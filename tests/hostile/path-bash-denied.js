// title: Bash without a grant is denied
// expect: result "denied"

try { await sh('touch made; touch ../outside/made') } catch (e) { e.kind || e.name }
