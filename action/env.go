package action

import "strings"

// ParamEnv is the environment variable that holds param name in a shell
// action: AX_PARAM_ and the name in upper case, with every byte that is not
// a letter, digit or underscore replaced by '_' ("order-id" gives
// AX_PARAM_ORDER_ID).
func ParamEnv(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return "AX_PARAM_" + string(b)
}
