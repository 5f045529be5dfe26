// Thenables stored in the result are awaited at return time.
o.a = new Promise((r) => setTimeout(() => r(5), 5));
o.nested = { list: [Promise.resolve(1), 2, { p: Promise.resolve("x") }] };
void (o.plain = 3);
