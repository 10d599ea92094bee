package verifier_test

import "testing"

// TestCorpusAsm is filled in by the assembly corpus.
func TestCorpusAsm(t *testing.T) { corpusRan["asm"] = true }
