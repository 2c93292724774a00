package netns

import "os"

// envMarker is set in the re-executed child, so it knows it is the inside copy.
const envMarker = "RELABEL_NETNS_CHILD"

// Inside reports whether this process is the copy Reexec started.
func Inside() bool { return os.Getenv(envMarker) == "1" }
