// Package tmpl is the template language of task fields (a shell command,
// an HTTP url and body, an idempotency key): the static rules that Parse
// checks, which the API and the state machine apply alike, without a
// clock, and the bounded functions (Funcs) and writer (Writer) that
// Render executes a template with. Together they bound what rendering a
// template can cost:
//
//   - no range, template, define, block, break or continue: a template
//     runs straight through, without loops or recursion;
//   - it calls only the functions of FuncNames (text/template's call is
//     refused);
//   - printf refuses a width or precision above WidthLimit, and the '*'
//     and [n] forms; every function refuses a result longer than
//     OutputLimit;
//   - the text is at most OutputLimit bytes and has no NUL byte;
//   - secret takes one literal name ({{secret "db_password"}}), a valid
//     name, as the first command of its pipeline;
//   - a shell command (action.command) may not call raw: a caller value
//     that is not quoted would run as shell code; a script reads
//     "$AX_PARAM_X" instead;
//   - an idempotency key (policy.idempotencyKey) may call neither raw nor
//     secret.
//
// Package model applies the rules to a task's fields (its errors name
// the field); package action renders the templates of an attempt.
package tmpl
