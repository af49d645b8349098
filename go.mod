module github.com/bl-backlog/bl

go 1.26.8

require (
	github.com/goccy/go-json v0.12.0
	github.com/gofrs/flock v0.13.1
)

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
