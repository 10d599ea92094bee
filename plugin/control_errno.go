package main

import "syscall"

// errConnRefused is what connecting to a socket nobody listens on gives.
var errConnRefused error = syscall.ECONNREFUSED
