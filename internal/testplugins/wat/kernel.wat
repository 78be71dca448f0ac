;; kernel.wat: runs a program of Extism kernel calls given as its input, for
;; the tests that hold Hangar's extism:host/env to Extism's
;; (internal/plugin/kernel_test.go). It speaks the legacy interface only so
;; that Hangar loads it: describe outputs {"tools":[]}.
;;
;; call reads its whole input into its own memory first, then runs it: a
;; sequence of operations, each an opcode byte followed by its arguments,
;; little-endian u64s. The result of each operation that returns one is
;; kept, as a u64 (an i32 result zero-extended). At the end the results go
;; to the output: a block of 8 bytes per result, filled with store_u64 and
;; set with output_set (no output when there is no result). call returns 0.
;;
;;   op  import            args   result
;;    0  alloc             n      yes
;;    1  free              p
;;    2  length            p      yes
;;    3  length_unsafe     p      yes
;;    4  load_u8           p      yes
;;    5  load_u64          p      yes
;;    6  store_u8          p v
;;    7  store_u64         p v
;;    8  input_load_u8     i      yes
;;    9  input_load_u64    i      yes
;;   10  input_set         p n
;;   11  output_set        p n
;;   12  input_length             yes
;;   13  input_offset             yes
;;   14  output_length            yes
;;   15  output_offset            yes
;;   16  error_set         p
;;   17  error_get                yes
;;   18  memory_bytes             yes
;;   19  reset
;;   20  config_get        p      yes
;;   21  var_get           p      yes
;;   22  var_set           p q
;;   23  http_status_code         yes
;;   24  http_headers             yes
;;   25  (a block)         n, then n bytes: alloc(n) and store_u8 of each
;;                                byte; the result is the block's offset
;;   26  log_info          p
;;   27  http_request      p q    yes
;;   28  get_log_level            yes
;;
;; Any other opcode traps.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "length_unsafe" (func $length_unsafe (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "load_u64" (func $load_u64 (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "input_set" (func $input_set (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_offset" (func $input_offset (result i64)))
  (import "extism:host/env" "output_length" (func $output_length (result i64)))
  (import "extism:host/env" "output_offset" (func $output_offset (result i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "error_get" (func $error_get (result i64)))
  (import "extism:host/env" "memory_bytes" (func $memory_bytes (result i64)))
  (import "extism:host/env" "reset" (func $reset))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "http_status_code" (func $http_status_code (result i32)))
  (import "extism:host/env" "http_headers" (func $http_headers (result i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (import "extism:host/env" "get_log_level" (func $get_log_level (result i32)))

  ;; 0..4095: unused; 4096..65535: results; 65536..: the program.
  (memory (export "memory") 4)
  (data (i32.const 512) "{\"tools\":[]}")

  (global $nres (mut i32) (i32.const 0))

  (func $result (param $v i64)
    (i64.store (i32.add (i32.const 4096) (i32.shl (global.get $nres) (i32.const 3))) (local.get $v))
    (global.set $nres (i32.add (global.get $nres) (i32.const 1))))

  ;; The number of u64 arguments of op.
  (func $arity (param $op i32) (result i32)
    (if (i32.le_u (local.get $op) (i32.const 5)) (then (return (i32.const 1))))
    (if (i32.le_u (local.get $op) (i32.const 7)) (then (return (i32.const 2))))
    (if (i32.le_u (local.get $op) (i32.const 9)) (then (return (i32.const 1))))
    (if (i32.le_u (local.get $op) (i32.const 11)) (then (return (i32.const 2))))
    (if (i32.le_u (local.get $op) (i32.const 15)) (then (return (i32.const 0))))
    (if (i32.eq (local.get $op) (i32.const 16)) (then (return (i32.const 1))))
    (if (i32.le_u (local.get $op) (i32.const 19)) (then (return (i32.const 0))))
    (if (i32.le_u (local.get $op) (i32.const 21)) (then (return (i32.const 1))))
    (if (i32.eq (local.get $op) (i32.const 22)) (then (return (i32.const 2))))
    (if (i32.le_u (local.get $op) (i32.const 24)) (then (return (i32.const 0))))
    (if (i32.le_u (local.get $op) (i32.const 26)) (then (return (i32.const 1))))
    (if (i32.eq (local.get $op) (i32.const 27)) (then (return (i32.const 2))))
    (i32.const 0))

  (func (export "describe") (result i32)
    (local $off i64) (local $k i32)
    (local.set $off (call $alloc (i64.const 12)))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (i32.const 12)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (i32.const 512) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (call $output_set (local.get $off) (i64.const 12))
    (i32.const 0))

  (func (export "call") (result i32)
    (local $len i32) (local $i i32) (local $p i32) (local $end i32)
    (local $op i32) (local $a i64) (local $b i64) (local $off i64) (local $k i32)
    (global.set $nres (i32.const 0))
    ;; the program, into this module's memory at 65536
    (local.set $len (i32.wrap_i64 (call $input_length)))
    (block $copied
      (loop $copy
        (br_if $copied (i32.ge_u (local.get $i) (local.get $len)))
        (i32.store8 (i32.add (i32.const 65536) (local.get $i))
          (call $input_load_u8 (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (local.set $p (i32.const 65536))
    (local.set $end (i32.add (i32.const 65536) (local.get $len)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $op (i32.load8_u (local.get $p)))
        (local.set $a (i64.load offset=1 (local.get $p)))
        (local.set $b (i64.load offset=9 (local.get $p)))
        (local.set $p (i32.add (local.get $p)
          (i32.add (i32.const 1) (i32.shl (call $arity (local.get $op)) (i32.const 3)))))
        (block $bad (block $o28 (block $o27 (block $o26 (block $o25 (block $o24
        (block $o23 (block $o22 (block $o21 (block $o20 (block $o19 (block $o18
        (block $o17 (block $o16 (block $o15 (block $o14 (block $o13 (block $o12
        (block $o11 (block $o10 (block $o9 (block $o8 (block $o7 (block $o6
        (block $o5 (block $o4 (block $o3 (block $o2 (block $o1 (block $o0
          (br_table $o0 $o1 $o2 $o3 $o4 $o5 $o6 $o7 $o8 $o9 $o10 $o11 $o12 $o13
            $o14 $o15 $o16 $o17 $o18 $o19 $o20 $o21 $o22 $o23 $o24 $o25 $o26
            $o27 $o28 $bad (local.get $op)))
          (call $result (call $alloc (local.get $a))) (br $next))
          (call $free (local.get $a)) (br $next))
          (call $result (call $length (local.get $a))) (br $next))
          (call $result (call $length_unsafe (local.get $a))) (br $next))
          (call $result (i64.extend_i32_u (call $load_u8 (local.get $a)))) (br $next))
          (call $result (call $load_u64 (local.get $a))) (br $next))
          (call $store_u8 (local.get $a) (i32.wrap_i64 (local.get $b))) (br $next))
          (call $store_u64 (local.get $a) (local.get $b)) (br $next))
          (call $result (i64.extend_i32_u (call $input_load_u8 (local.get $a)))) (br $next))
          (call $result (call $input_load_u64 (local.get $a))) (br $next))
          (call $input_set (local.get $a) (local.get $b)) (br $next))
          (call $output_set (local.get $a) (local.get $b)) (br $next))
          (call $result (call $input_length)) (br $next))
          (call $result (call $input_offset)) (br $next))
          (call $result (call $output_length)) (br $next))
          (call $result (call $output_offset)) (br $next))
          (call $error_set (local.get $a)) (br $next))
          (call $result (call $error_get)) (br $next))
          (call $result (call $memory_bytes)) (br $next))
          (call $reset) (br $next))
          (call $result (call $config_get (local.get $a))) (br $next))
          (call $result (call $var_get (local.get $a))) (br $next))
          (call $var_set (local.get $a) (local.get $b)) (br $next))
          (call $result (i64.extend_i32_u (call $http_status_code))) (br $next))
          (call $result (call $http_headers)) (br $next))
          ;; 25: a block holding the n bytes that follow
          (local.set $off (call $alloc (local.get $a)))
          (local.set $k (i32.const 0))
          (block $stored
            (loop $store
              (br_if $stored (i64.ge_u (i64.extend_i32_u (local.get $k)) (local.get $a)))
              (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
                (i32.load8_u (i32.add (local.get $p) (local.get $k))))
              (local.set $k (i32.add (local.get $k) (i32.const 1)))
              (br $store)))
          (local.set $p (i32.add (local.get $p) (i32.wrap_i64 (local.get $a))))
          (call $result (local.get $off))
          (br $next))
          (call $log_info (local.get $a)) (br $next))
          (call $result (call $http_request (local.get $a) (local.get $b))) (br $next))
          (call $result (i64.extend_i32_u (call $get_log_level))) (br $next))
        unreachable))
    ;; the results, to the output
    (if (i32.eqz (global.get $nres)) (then (return (i32.const 0))))
    (local.set $off (call $alloc (i64.extend_i32_u (i32.shl (global.get $nres) (i32.const 3)))))
    (local.set $k (i32.const 0))
    (block $written
      (loop $write
        (br_if $written (i32.ge_u (local.get $k) (global.get $nres)))
        (call $store_u64 (i64.add (local.get $off) (i64.extend_i32_u (i32.shl (local.get $k) (i32.const 3))))
          (i64.load (i32.add (i32.const 4096) (i32.shl (local.get $k) (i32.const 3)))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $write)))
    (call $output_set (local.get $off) (i64.extend_i32_u (i32.shl (global.get $nres) (i32.const 3))))
    (i32.const 0))
)
