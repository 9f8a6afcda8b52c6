# Sourced by the benches. free_port PYTHON: a TCP port the kernel just handed out and let go, for
# a run's rendezvous. A random one can still be held (TIME_WAIT of the run before), and then the
# store of rank 0 fails to bind and the other ranks wait for it forever.
free_port() {
  "$1" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
