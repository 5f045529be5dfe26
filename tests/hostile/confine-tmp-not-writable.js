// title: the host's /tmp outside TMPDIR and the roots is not writable
// expect: result "blocked"
// tools: Bash

const r = await Bash({ command: 'p=/tmp/wrepl-hostile-probe-$RANDOM$RANDOM; touch $p 2>/dev/null && { rm -f $p; echo escaped; }; true' })
r.stdout.includes('escaped') ? 'escaped' : 'blocked'
