// Package atomicfile writes files so that a reader sees the old content or
// the new one, never part of either: the content goes to a temporary file
// in the same directory, which is then renamed over the file.
package atomicfile

import "os"

// Write writes data to file through a temporary file in dir (the file's
// directory, created with mode 0700 if missing).
func Write(dir, file string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
