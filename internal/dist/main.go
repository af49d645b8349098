// Command dist builds bl's release archives: bl and bl-git for linux,
// darwin and windows on amd64 and arm64, each pair in an archive with the
// README, and SHA256SUMS over them. make dist runs it.
//
// The archives are reproducible: the same commit and version give the same
// bytes on any machine. Binaries are built with -trimpath, no build id and
// cgo off; archive entries are sorted, owned by 0:0, and stamped with the
// commit's time (SOURCE_DATE_EPOCH), never the clock.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Targets are the platforms a release covers.
var Targets = []struct{ OS, Arch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// File is one entry of an archive.
type File struct {
	Name string
	Mode int64
	Data []byte
}

func main() {
	version := flag.String("version", "dev", "version stamped into the binaries and the archive names")
	out := flag.String("out", "dist", "directory for the archives and SHA256SUMS")
	flag.Parse()
	if err := run(*version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(version, out string) error {
	stamp, err := sourceTime()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bl-dist-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var sums []string
	for _, t := range Targets {
		base := fmt.Sprintf("bl-%s-%s-%s", version, t.OS, t.Arch)
		exe := ""
		if t.OS == "windows" {
			exe = ".exe"
		}
		files := []File{{Name: base + "/README.md", Mode: 0o644, Data: readme}}
		for _, cmd := range []string{"bl", "bl-git"} {
			bin := filepath.Join(tmp, base, cmd+exe)
			build := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
				"-ldflags", "-s -w -buildid= -X github.com/bl-backlog/bl/internal/cli.version="+version,
				"-o", bin, "./cmd/"+cmd)
			build.Env = append(os.Environ(), "GOOS="+t.OS, "GOARCH="+t.Arch, "CGO_ENABLED=0")
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("build %s for %s/%s: %w", cmd, t.OS, t.Arch, err)
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				return err
			}
			files = append(files, File{Name: base + "/" + cmd + exe, Mode: 0o755, Data: data})
		}
		var buf bytes.Buffer
		name := base + ".tar.gz"
		if t.OS == "windows" {
			name = base + ".zip"
			err = Zip(&buf, files, stamp)
		} else {
			err = TarGz(&buf, files, stamp)
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		sums = append(sums, fmt.Sprintf("%x  %s", sha256.Sum256(buf.Bytes()), name))
		fmt.Println(filepath.Join(out, name))
	}
	sort.Strings(sums)
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644)
}

// sourceTime is SOURCE_DATE_EPOCH, else the last commit's time, else the
// epoch: never the clock, so two builds of one commit agree.
func sourceTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		if out, err := exec.Command("git", "log", "-1", "--format=%ct").Output(); err == nil {
			s = strings.TrimSpace(string(out))
		}
	}
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %v", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// TarGz writes files as a gzip-compressed tar, entries sorted by name,
// with fixed owners and times.
func TarGz(w io.Writer, files []File, stamp time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, f := range sorted(files) {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: stamp, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		h.PAXRecords = nil
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Zip writes files as a zip, entries sorted by name, with fixed times.
func Zip(w io.Writer, files []File, stamp time.Time) error {
	zw := zip.NewWriter(w)
	for _, f := range sorted(files) {
		h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate, Modified: stamp}
		h.SetMode(os.FileMode(f.Mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.Data); err != nil {
			return err
		}
	}
	return zw.Close()
}

func sorted(files []File) []File {
	out := append([]File(nil), files...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
