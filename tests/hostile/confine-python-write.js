// title: an interpreter (python3) cannot write outside either
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: "python3 -c \"open('{{OUTSIDE}}/py.txt','w').write('x')\" 2>/dev/null || perl -e 'open(F,\">{{OUTSIDE}}/py.txt\") or exit 1'" })
r.exitCode === 0 ? 'escaped' : 'blocked'
