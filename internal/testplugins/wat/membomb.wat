;; membomb.wat: a legacy-interface Extism module whose call grows its linear
;; memory one page (64 KiB) at a time until memory.grow fails, for memory
;; limit tests.
;;
;; The memory declares no maximum, so only the host's limit stops it (wazero
;; RuntimeConfig.WithMemoryLimitPages, which Extism's Manifest.Memory.MaxPages
;; sets). Run it ONLY under such a limit: without one wazero allows 65536
;; pages, that is 4 GiB.
;;
;; describe outputs, verbatim:
;;   {"tools":[{"name":"membomb","description":"Grows memory until it cannot","inputSchema":{"type":"object","properties":{}}}]}
;; call returns normally once memory.grow fails, with the memory size it
;; reached, in pages, as decimal text:
;;   {"content":[{"type":"text","text":"<pages>"}]}
;; With a limit of N pages, <pages> is N.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"membomb\",\"description\":\"Grows memory until it cannot\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}]}\00")
  (data (i32.const 1024) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 1536) "\"}]}\00")
  ;; 2048..2079: scratch buffer for the output; digits are written at 2048.

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

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  ;; Append the NUL-terminated string at $p to the buffer at $dst; returns
  ;; the new end.
  (func $append (param $dst i32) (param $p i32) (result i32)
    (local $n i32)
    (local.set $n (call $strlen (local.get $p)))
    (memory.copy (local.get $dst) (local.get $p) (local.get $n))
    (i32.add (local.get $dst) (local.get $n)))

  (func (export "call") (result i32)
    (local $pages i32) (local $v i32) (local $nd i32) (local $k i32) (local $end i32)
    (local $off i64)
    (block $full
      (loop $grow
        (br_if $full (i32.eq (memory.grow (i32.const 1)) (i32.const -1)))
        (br $grow)))
    (local.set $pages (memory.size))
    ;; decimal digits of $pages, most significant first, at 2048
    (local.set $v (local.get $pages))
    (loop $count
      (local.set $nd (i32.add (local.get $nd) (i32.const 1)))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $count (local.get $v)))
    (local.set $v (local.get $pages))
    (local.set $k (local.get $nd))
    (loop $digit
      (local.set $k (i32.sub (local.get $k) (i32.const 1)))
      (i32.store8 (i32.add (i32.const 2048) (local.get $k))
        (i32.add (i32.const 48) (i32.rem_u (local.get $v) (i32.const 10))))
      (local.set $v (i32.div_u (local.get $v) (i32.const 10)))
      (br_if $digit (local.get $k)))
    (i32.store8 (i32.add (i32.const 2048) (local.get $nd)) (i32.const 0))
    ;; build prefix + digits + suffix at 4096, then output it
    (local.set $end (call $append (i32.const 4096) (i32.const 1024)))
    (local.set $end (call $append (local.get $end) (i32.const 2048)))
    (local.set $end (call $append (local.get $end) (i32.const 1536)))
    (i32.store8 (local.get $end) (i32.const 0))
    (call $output_cstr (i32.const 4096))
    (i32.const 0))
)
