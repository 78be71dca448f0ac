// Package docs holds the test that keeps Hangar's documentation true to
// the code: README.md, RATIONALE.md, every docs/*.md and the READMEs of the
// examples. It has no code; run it with
//
//	go test ./internal/docs/
//
// # What is checked
//
// Every fenced code block whose language is yaml, sh (or shell, bash,
// console) or json:
//
//   - yaml: loaded as a Hangar configuration with package config, in a
//     temporary directory where every file and directory the block refers
//     to (path, source, verify.key, verify.trusted_root,
//     grants.allowed_paths[].host; absolute ones included, mapped under the
//     temporary directory) exists, and every ${NAME} is set.
//   - sh: every hangar command (hangar, ./hangar, /path/to/hangar or go run
//     ./cmd/hangar, also after "$ " prompts, in pipelines and lists) is
//     parsed against the real command line with cli.CheckArgs: the command
//     exists, its flags exist and have valid values, its arguments fit the
//     command's usage line. In a block with "$ " prompts only the prompt
//     lines are commands; the others are their output.
//   - json: valid JSON.
//
// Relative links ([text](path#anchor)) in those files must name a file
// that exists and, for a Markdown file, a heading that exists (GitHub's
// anchors).
//
// # Markers
//
// An HTML comment on the line just before a block's opening fence (several
// may be stacked) changes what is checked:
//
//	<!-- check: fragment -->
//	    the yaml block is deliberately partial (a snippet of a
//	    configuration, or another program's format): it only has to be
//	    valid YAML.
//	<!-- check: skip REASON -->
//	    the block is not checked at all; say why. Keep these few.
//	<!-- check: run -->
//	    the sh block is also executed with bash -euo pipefail, and must
//	    succeed, in a temporary directory holding ./hangar (also on the
//	    PATH), examples/hello/hello.wasm, examples/notes/notes.wasm and
//	    examples/hangar.yaml, with its own HOME and cache. It must not
//	    block (no serve).
//	<!-- check: client-config ARGS -->
//	    the json block must be what "hangar client-config ARGS
//	    --placeholders" prints, as JSON (placeholders, so that it does not
//	    depend on the environment). ARGS must give --command. Its --config
//	    is a path from the repository root, or the name of a yaml block of
//	    the same file whose first line is a comment naming it ("# team.yaml");
//	    in the output, the repository root reads /home/me/hangar and the
//	    directory of such blocks /home/me. Several client-config markers on
//	    one block check that each prints it.
//	<!-- check: tokens -->
//	    the yaml block is a file of static bearer tokens (http.auth's
//	    tokens_file), decoded as Hangar decodes one.
//	<!-- check: excerpt FILE -->
//	    the block's lines must appear, together and in order, in FILE (a
//	    path from the repository root), so that a copy shown in the
//	    documentation stays the same as the file; the block is checked
//	    as its language says besides.
//
// A failure names the file and line of the block, what failed, and these
// markers.
package docs
