//go:build !unix

package source

import (
	"os"
	"time"
)

func holdTemp(*os.File) {}

// abandonedTemp reports whether a temporary file is old enough that no
// download can still be writing it.
func abandonedTemp(_ string, fi os.FileInfo) bool {
	return time.Since(fi.ModTime()) > 24*time.Hour
}
