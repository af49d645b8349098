package gitsync

import (
	"os"
	"strings"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// signature is the author and committer of sync's commits, stamped now.
func (s *Syncer) signature() object.Signature {
	name, email, _ := s.identity()
	return object.Signature{Name: name, Email: email, When: s.o.Now()}
}

// identity is who sync commits as: the actor's name, with the email of
// GIT_AUTHOR_EMAIL or git's user.email. guessed is true when neither is
// set and the email was made up from the name.
func (s *Syncer) identity() (name, email string, guessed bool) {
	name = s.o.Actor
	if name == "" {
		name = "bl"
	}
	email = os.Getenv("GIT_AUTHOR_EMAIL")
	if email == "" {
		if cfg, err := s.g.repo.ConfigScoped(config.GlobalScope); err == nil {
			email = cfg.User.Email
		}
	}
	if email != "" {
		return name, email, false
	}
	if strings.Contains(name, "@") {
		return name, name, true
	}
	return name, name + "@localhost", true
}

// Identity is who sync commits as ("name <email>"), and whether the email
// was made up because git has no user.email.
func (s *Syncer) Identity() (string, bool) {
	name, email, guessed := s.identity()
	return name + " <" + email + ">", guessed
}
