// title: Bash(tar:*) does not cover tar options that run programs (-I, --use-compress-program, --checkpoint-action, -F) or a remote archive (host:file runs rsh)
// expect: result ["denied", "denied", "denied", "denied", "denied", "denied", "not-found"]
// tools: Write
// settings: {"permissions": {"allow": ["Bash(tar:*)", "Bash(tar -cf a.tar f.txt)"]}}

await put('f.txt', 'a\n')
await sh('tar -cf a.tar f.txt')
const r = []
for (const c of [
  'tar -t -I "touch ran.txt" -f a.tar',
  'tar -t --use-compress-program="touch ran.txt" -f a.tar',
  'tar -t --checkpoint=1 --checkpoint-action=exec="touch ran.txt" -f a.tar',
  'tar -t -F "touch ran.txt" -f a.tar',
  'tar -tf localhost:a.tar',
  'tar --list --rsh-command=/bin/sh --file=a.tar',
]) r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('ran.txt').then(() => 'exists', e => e.kind))
r
