// kfake-broker: franz-go's kfake (an in-memory Kafka-compatible cluster) on loopback ports, until
// SIGTERM. Usage: kfake-broker PORT [PORT ...] (one broker per port).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	var ports []int
	for _, a := range os.Args[1:] {
		p, err := strconv.Atoi(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, "not a port:", a)
			os.Exit(2)
		}
		ports = append(ports, p)
	}
	c, err := kfake.NewCluster(kfake.Ports(ports...), kfake.SeedTopics(-1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println("listening", c.ListenAddrs())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
