// Package api is ax's HTTP layer: thin handlers that decode and validate a
// request, call the Backend it declares, and map errors to status codes.
// It depends on nothing else of ax but the wire types in package model.
package api
