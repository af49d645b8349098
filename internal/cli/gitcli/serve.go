package gitcli

import (
	"github.com/bl-backlog/bl/internal/cli"
	"github.com/bl-backlog/bl/serve"

	// Webhooks are posted from bl-git, which links net/http anyway.
	_ "github.com/bl-backlog/bl/hooks/webhook"
)

// bl serve runs in bl-git, with the HTTP server and the metrics library
// the lean bl leaves out.
func init() { cli.Serve = serve.Command }
