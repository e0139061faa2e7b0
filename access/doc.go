// Package access decides who may do what on an ax node: it authenticates
// every request (api.Authenticator: members by node certificate or member
// key, the management and executor tokens, ACL tokens by their hash),
// manages ACL tokens and makes their revocation immediate (a revoke
// returns once no member accepts the token; running requests of a revoked
// token are cancelled), keeps secrets (sealed with the cluster's encrypt
// key before they are proposed) and checks that an executor reports only
// on its own attempts. It writes through the replica and reads the state
// machine, both through interfaces it declares (Replica, State).
package access
