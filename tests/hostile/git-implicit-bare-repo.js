// title: a directory written to look like a git directory does not make `git status` run its fsmonitor
// expect: result ["denied", "not-found", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(git status:*)"]}}

// A fake bare repository anywhere in the roots: HEAD, objects/, refs/ and a
// config whose core.fsmonitor runs a program, with core.worktree back up.
await put('evil/HEAD', 'ref: refs/heads/main\n')
await put('evil/config', '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = touch {{ROOT}}/pwned\n')
await put('evil/objects/info/keep', '')
await put('evil/refs/heads/keep', '')
await chdir('evil')
await sh('git status').catch(() => null)
// The same through a gitfile is refused outright (a path inside .git).
const gitfile = await put('../sub/.git', 'gitdir: ../evil\n').then(() => 'written', e => e.kind)
await chdir('..')
const r = [gitfile]
for (const f of ['pwned', 'sub/.git']) r.push(await cat(f).then(() => 'exists', e => e.kind))
r
