// setTimeout ordering, setInterval and clearTimeout.
const seen = [];
await new Promise((done) => {
  setTimeout(() => seen.push("b"), 20);
  setTimeout(() => seen.push("a"), 5);
  const never = setTimeout(() => seen.push("never"), 10);
  clearTimeout(never);
  let n = 0;
  const iv = setInterval(() => {
    seen.push("i" + ++n);
    if (n === 3) { clearInterval(iv); setTimeout(done, 30); }
  }, 1);
});
seen.filter((s) => !s.startsWith("i")).join(",") + "|" + seen.filter((s) => s.startsWith("i")).length
