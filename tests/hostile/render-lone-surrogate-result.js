// title: a result string and key with lone surrogates arrive as U+FFFD
// expect: result {"k\ufffd": "a\ufffdb"}

({ ['k\ud800']: 'a\udc00b' })
