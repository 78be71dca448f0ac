package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestDeployment(t *testing.T) {
	cfg, err := parse(t, `deployment:
  addresses:
    - 127.0.0.1:8081
    - "[::1]:8081"
    - "[FD00::7]:9000-9009"
    - Hangar-LB.Example.test:443
    - "*:9464"
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []AddrRange{
		{"127.0.0.1", 8081, 8081},
		{"::1", 8081, 8081},
		{"fd00::7", 9000, 9009},
		{"hangar-lb.example.test", 443, 443},
		{"*", 9464, 9464},
	}
	if !reflect.DeepEqual(cfg.Deployment.Addresses, want) {
		t.Errorf("addresses = %+v, want %+v", cfg.Deployment.Addresses, want)
	}
	var strs []string
	for _, a := range cfg.Deployment.Addresses {
		strs = append(strs, a.String())
	}
	if got := strings.Join(strs, " "); got != "127.0.0.1:8081 [::1]:8081 [fd00::7]:9000-9009 hangar-lb.example.test:443 *:9464" {
		t.Errorf("String: %s", got)
	}
	if cfg, err := parse(t, "plugins: []\n"); err != nil || cfg.Deployment.Addresses != nil {
		t.Errorf("no deployment section: %+v, %v", cfg.Deployment, err)
	}
}

func TestDeploymentErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"deployment:\n  addresses: [127.0.0.1]\n", `deployment.addresses[0]: invalid address "127.0.0.1": a port is required`},
		{"deployment:\n  addresses: [\"::1:80\"]\n", `deployment.addresses[0]: invalid address "::1:80": write an IPv6 address in brackets: [::1]:8080`},
		{"deployment:\n  addresses: [\"[::1]\"]\n", `invalid address "[::1]": a port is required`},
		{"deployment:\n  addresses: [\"[fe80::1%eth0]:80\"]\n", `IPv6 zones are not supported`},
		{"deployment:\n  addresses: [\"h:0\"]\n", `invalid address "h:0": the port must be between 1 and 65535`},
		{"deployment:\n  addresses: [\"h:9009-9000\"]\n", `invalid address "h:9009-9000": the range 9009-9000 is empty; write the lower port first`},
		{"deployment:\n  addresses: [\"h:80-\"]\n", `invalid address "h:80-": the port must be a number`},
		{"deployment:\n  addresses: [\"http://h:80\"]\n", `invalid address "http://h:80": remove the scheme`},
		{"deployment:\n  addresses: [\"h_-.x:80\"]\n", `invalid address "h_-.x:80": host has a label starting or ending with "-"`},
		{"deployment:\n  addresses: [\"h:80\", \"H:080\"]\n", `deployment.addresses[1]: address "H:080" is already listed on line 2`},
		{"deployment:\n  addresses: \"h:80\"\n", `deployment.addresses: expected a list of host:port addresses, got the string "h:80"`},
		{"deployment:\n  adresses: [\"h:80\"]\n", `deployment: unknown key "adresses"`},
	} {
		_, err := parse(t, tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}
