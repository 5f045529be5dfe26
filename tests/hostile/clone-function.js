// title: structuredClone of a function is a DataCloneError
// expect: error /DataCloneError/

structuredClone({ f() {} })
