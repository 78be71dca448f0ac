// Package forward sends a request of MCP 2026-07-28 over HTTP to the
// replica that holds its call or task, and streams the answer back
// (Forwarder): the HTTP edge's answer to a load balancer that sends a
// retry elsewhere than its call. A retry's requestState names the replica
// (mrtr.Manager.Locate), and a task's id too (tasks.Table.Locate): only
// names the replicas' shared key authenticated are forwarded to, so that
// a client cannot make a replica send requests anywhere else. A request
// one replica forwarded carries Header, and is never forwarded again; a
// replica that cannot be reached gets the client a JSON-RPC error telling
// it to start the request again (mrtr.ErrReplicaGone).
//
// It is HTTP alone: package mrtr, which holds the calls, knows no
// transport. It may import package mrtr (for its errors and the syntax of
// a replica's name) and the standard library; nothing of the server
// (TestLayout in package server).
package forward
