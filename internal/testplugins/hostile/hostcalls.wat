;; hostcalls.wat: a legacy-interface Extism module that calls host functions
;; with garbage memory offsets and lengths. The host must neither crash nor
;; hang: each call ends normally or with a trap, and the import calls of
;; Hangar's own namespace answer {"error": ...}.
;;
;; describe lists one tool per behaviour (inputSchema {"type":"object"}).
;; call picks the behaviour from the first letter of the tool name, found
;; after the first "name":" in its input:
;;
;;   user          calls every extism:host/user import that takes an offset
;;                 (create_message, create_elicitation, notify_logging_message,
;;                 notify_progress, notify_resource_updated,
;;                 notify_url_elicitation_completed) with each garbage offset
;;                 below, and list_roots; the request imports that take an
;;                 offset must answer one of a document starting {"error",
;;                 list_roots some document; outputs the text
;;                 "user imports answered errors", or "unexpected answer"
;;   config_get    config_get(G)
;;   var_get       var_get(G)
;;   set_var       var_set(G, G)
;;   http_request  http_request(G, G)
;;   log_info      log_info(G)
;;   output_set    output_set(G, G)
;;   t_output_len  output_set(a valid 16-byte block, G)
;;   free          free(G)
;;   read_u8       load_u8(G)
;;   input_load_u8 input_load_u8(G)
;;   write_u8      store_u8(G, 1)
;;   n_length      length(G)
;;   error_set     error_set(G), then returns 1
;;   alloc         alloc(G)
;;
;; where G is 0xFFFFFFFFFFFF. Each of these that returns outputs the text
;; "survived". Garbage offsets for "user": 0, 1, 0xFFFFFFFF, 0xFFFFFFFFFFFF,
;; 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "http_request" (func $http_request (param i64 i64) (result i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/user" "create_message" (func $create_message (param i64) (result i64)))
  (import "extism:host/user" "create_elicitation" (func $create_elicitation (param i64) (result i64)))
  (import "extism:host/user" "list_roots" (func $list_roots (result i64)))
  (import "extism:host/user" "notify_logging_message" (func $notify_logging_message (param i64)))
  (import "extism:host/user" "notify_progress" (func $notify_progress (param i64)))
  (import "extism:host/user" "notify_resource_updated" (func $notify_resource_updated (param i64)))
  (import "extism:host/user" "notify_url_elicitation_completed" (func $notify_url_elicitation_completed (param i64)))

  (memory (export "memory") 1)

  (data (i32.const 512) "{\"tools\":[{\"name\":\"user\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"config_get\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"var_get\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"set_var\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"http_request\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"log_info\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"output_set\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"t_output_len\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"free\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"read_u8\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"input_load_u8\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"write_u8\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"n_length\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"error_set\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"alloc\",\"inputSchema\":{\"type\":\"object\"}}]}\00")
  (data (i32.const 2048) "{\"content\":[{\"type\":\"text\",\"text\":\"survived\"}]}\00")
  (data (i32.const 2560) "{\"content\":[{\"type\":\"text\",\"text\":\"user imports answered errors\"}]}\00")
  (data (i32.const 3072) "{\"content\":[{\"type\":\"text\",\"text\":\"unexpected answer\"}],\"isError\":true}\00")
  (data (i32.const 3584) "\"name\":\"\00")
  (data (i32.const 3600) "{\"error\"\00")
  ;; the garbage offsets, six little-endian i64 at 4096
  (data (i32.const 4096)
    "\00\00\00\00\00\00\00\00"
    "\01\00\00\00\00\00\00\00"
    "\ff\ff\ff\ff\00\00\00\00"
    "\ff\ff\ff\ff\ff\ff\00\00"
    "\ff\ff\ff\ff\ff\ff\ff\7f"
    "\ff\ff\ff\ff\ff\ff\ff\ff")

  (global $G i64 (i64.const 0xFFFFFFFFFFFF))
  (global $inlen (mut i64) (i64.const 0))

  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $n))

  (func $output_cstr (param $p i32)
    (local $len i32) (local $off i64) (local $k i32)
    (local.set $len (call $strlen (local.get $p)))
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (local.get $len)))
        (call $store_u8
          (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (local.get $p) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))

  (func $in (param $i i64) (result i32)
    (if (result i32) (i64.lt_u (local.get $i) (global.get $inlen))
      (then (call $input_load_u8 (local.get $i)))
      (else (i32.const -1))))

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

  ;; The first letter of the tool name, or -1.
  (func $tool_letter (result i32)
    (local $i i64)
    (global.set $inlen (call $input_length))
    (block $none
      (loop $l
        (br_if $none (i64.ge_u (local.get $i) (global.get $inlen)))
        (if (call $input_has (local.get $i) (i32.const 3584))
          (then (return (call $in (i64.add (local.get $i) (i64.const 8))))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $l)))
    (i32.const -1))

  ;; 1 when the Extism block at $off starts with {"error".
  (func $is_error (param $off i64) (result i32)
    (local $k i32) (local $c i32)
    (if (i64.eqz (local.get $off)) (then (return (i32.const 0))))
    (if (i64.lt_u (call $length (local.get $off)) (i64.const 8)) (then (return (i32.const 0))))
    (block $no
      (loop $l
        (local.set $c (i32.load8_u (i32.add (i32.const 3600) (local.get $k))))
        (if (i32.eqz (local.get $c)) (then (return (i32.const 1))))
        (br_if $no (i32.ne (call $load_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))) (local.get $c)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (i32.const 0))

  (func $user (result i32)
    (local $k i32) (local $g i64) (local $ok i32)
    (local.set $ok (i32.const 1))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $k) (i32.const 6)))
        (local.set $g (i64.load (i32.add (i32.const 4096) (i32.shl (local.get $k) (i32.const 3)))))
        (local.set $ok (i32.and (local.get $ok) (call $is_error (call $create_message (local.get $g)))))
        (local.set $ok (i32.and (local.get $ok) (call $is_error (call $create_elicitation (local.get $g)))))
        (call $notify_logging_message (local.get $g))
        (call $notify_progress (local.get $g))
        (call $notify_resource_updated (local.get $g))
        (call $notify_url_elicitation_completed (local.get $g))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    ;; list_roots takes no input: it answers an error or the roots, but
    ;; always a document
    (local.set $ok (i32.and (local.get $ok) (i64.ne (call $list_roots) (i64.const 0))))
    (if (local.get $ok)
      (then (call $output_cstr (i32.const 2560)))
      (else (call $output_cstr (i32.const 3072))))
    (i32.const 0))

  (func (export "describe") (result i32)
    (call $output_cstr (i32.const 512))
    (i32.const 0))

  (func (export "call") (result i32)
    (local $c i32) (local $off i64)
    (local.set $c (call $tool_letter))
    (if (i32.eq (local.get $c) (i32.const 117)) (then (return (call $user))))            ;; u
    (if (i32.eq (local.get $c) (i32.const 99)) (then (drop (call $config_get (global.get $G)))))  ;; c
    (if (i32.eq (local.get $c) (i32.const 118)) (then (drop (call $var_get (global.get $G)))))    ;; v
    (if (i32.eq (local.get $c) (i32.const 115)) (then (call $var_set (global.get $G) (global.get $G)))) ;; s
    (if (i32.eq (local.get $c) (i32.const 104)) (then (drop (call $http_request (global.get $G) (global.get $G))))) ;; h
    (if (i32.eq (local.get $c) (i32.const 108)) (then (call $log_info (global.get $G))))         ;; l
    (if (i32.eq (local.get $c) (i32.const 111)) (then                                           ;; o
      (call $output_set (global.get $G) (global.get $G))
      (return (i32.const 0))))
    (if (i32.eq (local.get $c) (i32.const 116)) (then                                           ;; t
      (local.set $off (call $alloc (i64.const 16)))
      (call $output_set (local.get $off) (global.get $G))
      (return (i32.const 0))))
    (if (i32.eq (local.get $c) (i32.const 102)) (then (call $free (global.get $G))))             ;; f
    (if (i32.eq (local.get $c) (i32.const 114)) (then (drop (call $load_u8 (global.get $G)))))    ;; r
    (if (i32.eq (local.get $c) (i32.const 105)) (then (drop (call $input_load_u8 (global.get $G))))) ;; i
    (if (i32.eq (local.get $c) (i32.const 119)) (then (call $store_u8 (global.get $G) (i32.const 1)))) ;; w
    (if (i32.eq (local.get $c) (i32.const 110)) (then (drop (call $length (global.get $G)))))     ;; n
    (if (i32.eq (local.get $c) (i32.const 101)) (then                                           ;; e
      (call $error_set (global.get $G))
      (return (i32.const 1))))
    (if (i32.eq (local.get $c) (i32.const 97)) (then (drop (call $alloc (global.get $G)))))      ;; a
    (call $output_cstr (i32.const 2048))
    (i32.const 0))
)
