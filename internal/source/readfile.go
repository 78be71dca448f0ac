package source

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular: a module (or another file Hangar reads whole, such as a
// key) is not a regular file: a device such as /dev/zero, a FIFO, a
// socket or a directory. Such files are never read, so that one cannot
// hang start-up or exhaust memory.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens path for reading, refusing anything but a regular file
// of at most max bytes (max <= 0: no limit). The file is opened without
// blocking (a FIFO would otherwise wait for a writer) and checked on the
// open descriptor, so a path swapped for a device after a check is still
// refused.
func openRegular(path string, max int64) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fileType(fi.Mode()))}
	}
	if max > 0 && fi.Size() > max {
		f.Close()
		return nil, 0, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrTooLarge, fi.Size(), max)}
	}
	return f, fi.Size(), nil
}

// fileType names the type of a non-regular file for errors.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "type " + m.Type().String()
}

// ReadModule reads a module file: a regular file of at most max bytes
// (max <= 0: DefaultMaxSize). Anything else is refused before it is read:
// errors wrap ErrNotRegular or ErrTooLarge. A file that grows past max
// while it is read is refused too.
func ReadModule(path string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxSize
	}
	f, size, err := openRegular(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, size+1)
	for {
		if int64(len(b)) > max {
			return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):min(cap(b), int(max)+1)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}

// CheckModuleFile reports whether path can be a module: a regular file of
// at most max bytes (max <= 0: DefaultMaxSize). It reads nothing; errors
// wrap ErrNotRegular or ErrTooLarge, or are the file system's.
func CheckModuleFile(path string, max int64) error {
	if max <= 0 {
		max = DefaultMaxSize
	}
	f, _, err := openRegular(path, max)
	if err != nil {
		return err
	}
	return f.Close()
}

// hashRegular returns the SHA-256 of a regular file of at most max bytes
// (max <= 0: no limit), in hex.
func hashRegular(path string, max int64) (string, error) {
	f, _, err := openRegular(path, max)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	src := io.Reader(f)
	if max > 0 {
		src = io.LimitReader(f, max+1)
	}
	n, err := io.Copy(sum, src)
	if err != nil {
		return "", err
	}
	if max > 0 && n > max {
		return "", &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}
