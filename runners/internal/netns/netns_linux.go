//go:build linux

package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"unsafe"
)

// Reexec runs this binary again, with the same arguments, environment and
// standard streams, in a new network namespace, waits for it and returns its
// exit code. It first tries a plain network namespace (root) and then one
// inside a new user namespace (unprivileged users, where the kernel allows).
// err is non-nil only when the child could not be started at all.
func Reexec() (code int, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("netns: finding this executable: %w", err)
	}
	attrs := []*syscall.SysProcAttr{
		{Cloneflags: syscall.CLONE_NEWNET},
		{
			Cloneflags:                 syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
			// The capabilities a new user namespace grants are lost at exec
			// unless kept as ambient ones; bringing loopback up needs CAP_NET_ADMIN.
			AmbientCaps: []uintptr{capNetAdmin},
		},
	}
	var errs []error
	for _, a := range attrs {
		// The child dies with us: a killed test must not leave it running.
		a.Pdeathsig = syscall.SIGKILL
		cmd := exec.Command(self, os.Args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), envMarker+"=1")
		cmd.SysProcAttr = a
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
		go func() {
			for s := range sigs {
				cmd.Process.Signal(s)
			}
		}()
		err := cmd.Wait()
		signal.Stop(sigs)
		close(sigs)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), nil
		}
		if err != nil {
			return 0, fmt.Errorf("netns: waiting for the isolated copy: %w", err)
		}
		return 0, nil
	}
	return 0, fmt.Errorf("netns: cannot create a network namespace (needs root or unprivileged user namespaces): %w", errors.Join(errs...))
}

const (
	capNetAdmin  = 12 // CAP_NET_ADMIN, linux/capability.h
	siocgifflags = 0x8913
	siocsifflags = 0x8914
	iffUp        = 0x1
)

// LoopbackUp brings up "lo", which a new network namespace starts with down.
func LoopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netns: socket: %w", err)
	}
	defer syscall.Close(fd)
	// struct ifreq: a 16-byte interface name, then a union whose first member
	// here is the short ifr_flags; 40 bytes covers the whole struct on 64-bit.
	var ifr [40]byte
	copy(ifr[:], "lo")
	flags := (*uint16)(unsafe.Pointer(&ifr[syscall.IFNAMSIZ]))
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocgifflags, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("netns: reading the flags of lo: %w", e)
	}
	*flags |= iffUp
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), siocsifflags, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("netns: bringing lo up: %w", e)
	}
	return nil
}

// OnlyLoopback reports whether the only network interface is loopback, which
// is true inside the namespace Reexec makes and false on an ordinary host.
// (It asks the kernel through net.Interfaces: /sys/class/net would show the
// namespace sysfs was mounted in, not this process's.)
func OnlyLoopback() (bool, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return false, fmt.Errorf("netns: listing interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			return false, nil
		}
	}
	return len(ifs) > 0, nil
}
