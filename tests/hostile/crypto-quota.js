// title: crypto.getRandomValues over 65,536 bytes is a QuotaExceededError
// expect: error /QuotaExceededError/

crypto.getRandomValues(new Uint8Array(1 << 20))
