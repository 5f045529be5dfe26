// title: Bash(gawk:*) does not cover gawk's options that load code or write files (-l, -i, -o, -p, -d, --source with system)
// expect: result ["denied", "denied", "denied", "denied", "denied", "denied", "not-found"]
// settings: {"permissions": {"allow": ["Bash(gawk:*)"]}}

const r = []
for (const c of [
  'gawk -l filefuncs "BEGIN { print 1 }"',
  'gawk -i inc.awk "BEGIN { print 1 }"',
  'gawk -o prof.txt "BEGIN { print 1 }"',
  'gawk -p prof.txt "BEGIN { print 1 }"',
  'gawk -d dump.txt "BEGIN { print 1 }"',
  `gawk --source 'BEGIN { system("touch ran.txt") }'`,
]) r.push(await sh(c).then(() => 'ran', e => e.kind))
r.push(await cat('ran.txt').then(() => 'exists', e => e.kind))
r
