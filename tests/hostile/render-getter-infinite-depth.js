// title: getters producing an infinitely deep object
// expect: result-matches /\[Object\]/

const mk = () => ({ get a() { return mk() } })
mk()
