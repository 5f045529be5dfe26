// title: TaskOutput with ids that are no task (paths, prototype names, a huge one, another type) is a clear error each time, never another context's or a crash
// expect: result ["not-found","not-found","not-found","not-found","not-found","invalid-input","invalid-input"]
// tools: Bash

const ids = ['../bash_1', '__proto__', 'constructor', 'bash_1'.repeat(100000), 'bash_0', '', 42]
const kinds = []
for (const id of ids) {
  try { await TaskOutput({ task_id: id, block: false }); kinds.push('answered') } catch (e) { kinds.push(e.kind || e.name) }
}
kinds
