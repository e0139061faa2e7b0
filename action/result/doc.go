// Package result is what a successful attempt publishes for downstream
// tasks and readers: one JSON value of at most Max (64 KiB) bytes. It
// checks and compacts a result (Compact), gives a shell attempt its
// private result file (File, named by $AX_RESULT_FILE), takes an HTTP
// attempt's result from its response body (FromHTTP, with a resultFrom
// JSON pointer), and holds what an SDK handler publishes (Set, Box). The
// action package runs attempts with it.
package result
