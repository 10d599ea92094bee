// Package codesdoc keeps docs/error-codes.md, the reference of the
// verifier's error and warning codes, in step with the codes themselves:
// its test renders the reference from package verifier (each code's
// number and name from verifier.Code, its explanation and example from the
// doc comment of its constant in verifier/codes.go) and compares it with the
// committed file. go test ./internal/codesdoc -update rewrites the file.
package codesdoc
