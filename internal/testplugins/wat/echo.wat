;; echo.wat: a hand-written Extism-ABI module speaking Hangar's legacy
;; interface (exports describe and call), with no language runtime.
;;
;; describe outputs, verbatim:
;;   {"tools":[{"name":"echo","description":"Echoes arguments.text back","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}
;;
;; call scans its input for the first key "text" whose value is a JSON
;; string and outputs
;;   {"content":[{"type":"text","text":"<that string>"}]}
;; copying the string's bytes, escapes included, so the text comes back
;; exactly as sent. It does not look at params.name: any tool name echoes.
;; When no such key is found it outputs
;;   {"content":[{"type":"text","text":"echo: argument \"text\" must be a string"}],"isError":true}
;; The scan is a byte search, not a JSON parser: a "text" key elsewhere in
;; the input (in _meta, say) that comes first would be echoed instead.
;;
;; It keeps no state between calls and exports hangar_stateless to say so
;; (docs/abi.md), so Hangar runs several instances of it at once.
;;
;; Strings live in data segments, NUL-terminated, one per 512-byte slot.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"echo\",\"description\":\"Echoes arguments.text back\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}]}\00")
  (data (i32.const 1024) "\"text\"\00")
  (data (i32.const 1536) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 2048) "\"}]}\00")
  (data (i32.const 2560) "{\"content\":[{\"type\":\"text\",\"text\":\"echo: argument \\\"text\\\" must be a string\"}],\"isError\":true}\00")

  (global $inlen (mut i64) (i64.const 0))

  ;; strlen of the NUL-terminated string at $p.
  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $n))

  ;; Copy $len bytes of linear memory at $p to Extism memory at $dst.
  (func $put (param $dst i64) (param $p i32) (param $len i32)
    (local $k i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $dst) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (local.get $p) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l))))

  ;; Set the output to the NUL-terminated string at $p.
  (func $output_cstr (param $p i32)
    (local $len i32) (local $off i64)
    (local.set $len (call $strlen (local.get $p)))
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (call $put (local.get $off) (local.get $p) (local.get $len))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))

  ;; Input byte at $i, or -1 past the end.
  (func $in (param $i i64) (result i32)
    (if (result i32) (i64.lt_u (local.get $i) (global.get $inlen))
      (then (call $input_load_u8 (local.get $i)))
      (else (i32.const -1))))

  ;; First index at or after $i that is not JSON whitespace.
  (func $skipws (param $i i64) (result i64)
    (local $c i32)
    (block $done
      (loop $l
        (local.set $c (call $in (local.get $i)))
        (br_if $done
          (i32.eqz
            (i32.or
              (i32.or (i32.eq (local.get $c) (i32.const 32)) (i32.eq (local.get $c) (i32.const 9)))
              (i32.or (i32.eq (local.get $c) (i32.const 10)) (i32.eq (local.get $c) (i32.const 13))))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $l)))
    (local.get $i))

  ;; 1 when the input at $i starts with the NUL-terminated string at $p.
  (func $input_has (param $i i64) (param $p i32) (result i32)
    (local $k i32) (local $c i32)
    (block $no
      (loop $l
        (local.set $c (i32.load8_u (i32.add (local.get $p) (local.get $k))))
        (if (i32.eqz (local.get $c)) (then (return (i32.const 1))))
        (br_if $no
          (i32.ne (call $in (i64.add (local.get $i) (i64.extend_i32_u (local.get $k)))) (local.get $c)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (i32.const 0))

  ;; Output prefix + input[$start:$start+$n] + suffix.
  (func $emit_echo (param $start i64) (param $n i64)
    (local $pl i64) (local $sl i64) (local $total i64) (local $off i64) (local $k i64)
    (local.set $pl (i64.extend_i32_u (call $strlen (i32.const 1536))))
    (local.set $sl (i64.extend_i32_u (call $strlen (i32.const 2048))))
    (local.set $total (i64.add (i64.add (local.get $pl) (local.get $n)) (local.get $sl)))
    (local.set $off (call $alloc (local.get $total)))
    (call $put (local.get $off) (i32.const 1536) (i32.wrap_i64 (local.get $pl)))
    (block $done
      (loop $l
        (br_if $done (i64.ge_u (local.get $k) (local.get $n)))
        (call $store_u8
          (i64.add (i64.add (local.get $off) (local.get $pl)) (local.get $k))
          (call $input_load_u8 (i64.add (local.get $start) (local.get $k))))
        (local.set $k (i64.add (local.get $k) (i64.const 1)))
        (br $l)))
    (call $put
      (i64.add (i64.add (local.get $off) (local.get $pl)) (local.get $n))
      (i32.const 2048) (i32.wrap_i64 (local.get $sl)))
    (call $output_set (local.get $off) (local.get $total)))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (local $i i64) (local $j i64) (local $start i64) (local $c i32)
    (global.set $inlen (call $input_length))
    (block $missing
      (loop $search
        (br_if $missing (i64.ge_u (local.get $i) (global.get $inlen)))
        (if (call $input_has (local.get $i) (i32.const 1024))
          (then
            (local.set $j (call $skipws
              (i64.add (local.get $i) (i64.extend_i32_u (call $strlen (i32.const 1024))))))
            (if (i32.eq (call $in (local.get $j)) (i32.const 58)) ;; ':'
              (then
                (local.set $j (call $skipws (i64.add (local.get $j) (i64.const 1))))
                (if (i32.eq (call $in (local.get $j)) (i32.const 34)) ;; '"'
                  (then
                    (local.set $start (i64.add (local.get $j) (i64.const 1)))
                    (local.set $j (local.get $start))
                    (block $end
                      (loop $scan
                        (local.set $c (call $in (local.get $j)))
                        (br_if $missing (i32.lt_s (local.get $c) (i32.const 0)))
                        (br_if $end (i32.eq (local.get $c) (i32.const 34)))
                        ;; a backslash escapes the next byte
                        (local.set $j (i64.add (local.get $j)
                          (select (i64.const 2) (i64.const 1) (i32.eq (local.get $c) (i32.const 92)))))
                        (br $scan)))
                    (call $emit_echo (local.get $start) (i64.sub (local.get $j) (local.get $start)))
                    (return (i32.const 0))))))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $search)))
    (call $output_cstr (i32.const 2560))
    (i32.const 0))

  ;; The stateless marker: never called.
  (func (export "hangar_stateless"))
)
