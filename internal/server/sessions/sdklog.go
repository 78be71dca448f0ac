package sessions

import (
	"context"
	"log/slog"
	"strings"
)

// sdkLogger returns the logger handed to the MCP SDK: log, with the SDK's
// info records ("server session connected", "session initialized", "client
// log level set" and the like, one or more per session) demoted to debug,
// so that info stays quiet however many clients come and go. So is its
// error for a tool name outside MCP's rules, which it logs each time a
// plugin's tools are offered again (each change of its list): the core
// warns of it once. Other warnings and errors pass unchanged.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(demoteInfo{log.Handler()})
}

// demoteInfo is a slog.Handler that turns records at info level (and
// between info and warn) into debug records.
type demoteInfo struct{ h slog.Handler }

func demoted(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (d demoteInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, demoted(l))
}

func (d demoteInfo) Handle(ctx context.Context, r slog.Record) error {
	l := demoted(r.Level)
	if strings.HasPrefix(r.Message, "AddTool: invalid tool name") {
		l = slog.LevelDebug // the core warns of it once
		if !d.h.Enabled(ctx, l) {
			return nil
		}
	}
	if l != r.Level {
		r = r.Clone()
		r.Level = l
	}
	return d.h.Handle(ctx, r)
}

func (d demoteInfo) WithAttrs(as []slog.Attr) slog.Handler { return demoteInfo{d.h.WithAttrs(as)} }
func (d demoteInfo) WithGroup(name string) slog.Handler    { return demoteInfo{d.h.WithGroup(name)} }
