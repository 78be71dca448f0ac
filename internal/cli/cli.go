// Package cli implements the hangar command line: serve, inspect, call.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Env is what a command may use of the process: its streams and environment.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

type command struct {
	name  string
	args  string
	short string
	long  string
	run   func(ctx context.Context, env *Env, args []string) error
	flags func(fs *flag.FlagSet) // declares the flags, for help
}

var commands []*command

func init() {
	commands = []*command{serveCmd, inspectCmd, callCmd, newCmd, pullCmd, pushCmd, importCmd, warmCmd, clientConfigCmd, versionCmd}
}

// errUsage reports bad command-line usage; the message has been printed.
var errUsage = errors.New("usage")

const overview = `Hangar serves WebAssembly plugins to AI applications as one MCP server.

Usage:
  hangar <command> [flags] [arguments]

Commands:
%s
Run "hangar help <command>" or "hangar <command> --help" for details.
`

func usage(w io.Writer) {
	var b strings.Builder
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.short)
	}
	fmt.Fprintf(w, overview, b.String())
}

// Main runs the hangar command line and returns the process exit code.
func Main(ctx context.Context, args []string, env *Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		usage(env.Stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			usage(env.Stdout)
			return 0
		}
		if c := lookup(rest[0]); c != nil {
			c.help(env.Stdout)
			return 0
		}
		if s := suggestCommand(rest[0]); s != "" {
			fmt.Fprintf(env.Stderr, "hangar: unknown command %q; did you mean %q?\n", rest[0], s)
			return 2
		}
		fmt.Fprintf(env.Stderr, "hangar: unknown command %q\n", rest[0])
		return 2
	case "--version", "-version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		if s := suggestCommand(name); s != "" {
			fmt.Fprintf(env.Stderr, "hangar: unknown command %q; did you mean %q?\nRun \"hangar help\" for the list of commands.\n", name, s)
			return 2
		}
		fmt.Fprintf(env.Stderr, "hangar: unknown command %q\n\n", name)
		usage(env.Stderr)
		return 2
	}
	err := c.run(ctx, env, rest)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errToolFailed):
		return 1
	}
	fmt.Fprintf(env.Stderr, "hangar %s: %v\n", c.name, err)
	return 1
}

// suggestCommand returns the command name was likely meant to be, or "".
func suggestCommand(name string) string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return closest(name, names)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// flagSet returns an empty flag set whose parse errors go to w.
func (c *command) flagSet(w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {}
	return fs
}

// help prints the command's usage: its synopsis, the first paragraph of
// its description, its flags, and then the rest of the description, so
// that the flags are on the first screen.
func (c *command) help(w io.Writer) {
	summary, details, _ := strings.Cut(strings.TrimSpace(c.long), "\n\n")
	fmt.Fprintf(w, "Usage: hangar %s %s\n\n%s\n", c.name, c.args, summary)
	if c.flags != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if details != "" {
		fmt.Fprintf(w, "\n%s\n", details)
	}
}

// flagAliases are flags of other programs, and the flag of Hangar's that
// does what they do.
var flagAliases = map[string]string{
	"port":    "http",
	"addr":    "http",
	"address": "http",
	"listen":  "http",
	"host":    "http",
	"cache":   "cache-dir",
	"verbose": "log-level",
	"debug":   "log-level",
}

// suggestFlag returns the line that names the flag of fs the undefined
// flag of err likely meant, or "".
func suggestFlag(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	want := flagAliases[name]
	if fs.Lookup(want) == nil {
		want = closest(name, names)
	}
	f := fs.Lookup(want)
	if f == nil {
		return ""
	}
	_, usage := flag.UnquoteUsage(f)
	return fmt.Sprintf("Did you mean --%s? (%s)", f.Name, usage)
}

// parse parses args with the command's flags, printing help to stdout on
// -h and errors to stderr on misuse. Flags may come before or after the
// arguments.
func (c *command) parse(env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help(env.Stdout)
				return nil, err
			}
			if hint := suggestFlag(fs, err); hint != "" {
				fmt.Fprintln(env.Stderr, hint)
			}
			fmt.Fprintf(env.Stderr, "Run 'hangar %s --help' for usage.\n", c.name)
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// logger builds the diagnostics logger on stderr.
func logger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
