package gitcli

import (
	"github.com/bl-backlog/bl/internal/board"
	"github.com/bl-backlog/bl/internal/cli"
)

// bl board runs in bl-git, with the terminal libraries the lean bl leaves
// out.
func init() {
	cli.Board = func(a *cli.App, _ *cli.BoardCmd) error {
		b, err := a.Open()
		if err != nil {
			return err
		}
		return board.Run(a.Context(), board.Source{B: b, Now: a.Clock()})
	}
}
