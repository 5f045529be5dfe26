// title: Write to .git/config (core.fsmonitor runs a program on git status) is refused under a broad Write grant, and the file is not created
// expect: result [true, "not-found"]
// tools: Write

const e = await put('.git/config', '[core]\n\tfsmonitor = touch pwned\n').catch(e => e)
;[e instanceof Error, await cat('.git/config').then(() => 'exists', e => e.kind)]
