// Command cmd writes ledger/internal/wire/codec_gen.go; go generate runs
// it in ledger/internal/wire.
package main

import (
	"fmt"
	"os"

	"github.com/bl-backlog/bl/ledger/internal/codecgen"
)

func main() {
	src, err := codecgen.Generate(".")
	if err == nil {
		err = os.WriteFile("codec_gen.go", src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
