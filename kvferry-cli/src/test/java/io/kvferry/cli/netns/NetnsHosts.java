package io.kvferry.cli.netns;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvferry.cli.CliChild;
import io.kvferry.test.Child;

/**
 * Hosts made of Linux network namespaces: one namespace per host, each with its own loopback and one {@code eth0}
 * (a veth pair) plugged into a bridge in a further "switch" namespace, with an address on a private subnet. Nothing
 * is shared with the machine's own network: the roles started here reach each other only through the switch. Hosts of
 * several interfaces ({@link #create(int, int, String...)}) have {@code eth0}, {@code eth1}, ... each plugged into a
 * bridge of its own with a subnet of its own, as hosts with one back-end NIC per network rail are.
 *
 * <p>The harness can unplug a host's cable at the switch ({@link #cutLink}, {@link #restoreLink}), cap what a host
 * sends with a token bucket ({@link #capEgress}, the {@code tbf} qdisc) and silently drop chosen TCP flows of a host
 * ({@link #dropFlows}, {@code u32} filters), as a NAT that forgot them does. Every namespace has a name unique to this run,
 * so a leftover of a crashed run never collides; {@link #close} removes them all and checks that none is left, and a
 * JVM shutdown hook does the same should the test JVM end without closing.
 *
 * <p>Needs Linux, root and {@code ip}/{@code tc} (iproute2): {@link #assumeAvailable()} skips the calling tests with
 * the reason when any is missing.
 */
final class NetnsHosts implements AutoCloseable {

	/** Environment variables that would override address detection in the roles: the hosts must not inherit them. */
	static final Set<String> ADDRESS_ENV = Set.of("SGLANG_HOST_IP", "HOST_IP", "SGLANG_LOCAL_IP_NIC");
	/** Every host's interface, as on a real machine. */
	static final String NIC = "eth0";

	private static final String IP = find("ip");
	private static final String TC = find("tc");
	private static final String SS = find("ss");
	// Interface k of every host is on 10.203.k.0/24.
	private static final String SUBNET = "10.203.";
	private static final int FIRST_HOST = 10;
	private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(20);
	private static final Duration LINK_TIMEOUT = Duration.ofSeconds(10);
	private static final Duration POLL = Duration.ofMillis(20);
	// Bucket depth of the cap: above the largest frame, small next to any transfer measured through it.
	private static final String TBF_BURST = "64kb";
	private static final ObjectMapper JSON = new ObjectMapper();

	private final String prefix;
	private final String switchNs;
	private final Map<String, Host> hosts = new LinkedHashMap<>();
	private int nics = 1;
	// Namespaces made so far, in order: what close removes.
	private final List<String> made = Collections.synchronizedList(new ArrayList<>());
	private final AtomicBoolean closed = new AtomicBoolean();
	private final Thread backstop;

	/**
	 * One host.
	 *
	 * @param name the test's name for it (also its switch port)
	 * @param namespace its network namespace
	 * @param address its IPv4 address on the subnet of {@code eth0}
	 * @param index its place among the hosts: the last byte of each of its addresses follows from it
	 */
	record Host(String name, String namespace, String address, int index) {
	}

	private NetnsHosts(String prefix) {
		this.prefix = prefix;
		this.switchNs = prefix + "-switch";
		this.backstop = new Thread(this::removeAll, "netns-hosts-cleanup");
		Runtime.getRuntime().addShutdownHook(backstop);
	}

	/**
	 * Skips the calling test (a JUnit assumption, with the reason) where network namespaces cannot be made: not Linux,
	 * not root, no {@code ip} or {@code tc}, or the kernel refuses a namespace (e.g. an unprivileged container).
	 */
	static void assumeAvailable() {
		String os = System.getProperty("os.name");
		assumeTrue(os.toLowerCase(Locale.ROOT).contains("linux"),
				"network namespace tests need Linux; this is " + os);
		String uid = effectiveUid();
		assumeTrue("0".equals(uid), "network namespace tests need root to make namespaces; effective uid is " + uid);
		assumeTrue(IP != null, "network namespace tests need `ip` (iproute2) on PATH; `.ci/run` installs it");
		assumeTrue(TC != null, "network namespace tests need `tc` (iproute2) on PATH; `.ci/run` installs it");
		assumeTrue(SS != null, "network namespace tests need `ss` (iproute2) on PATH; `.ci/run` installs it");
		String probe = newPrefix() + "-probe";
		Result made = exec(List.of(IP, "netns", "add", probe));
		if (made.status() == 0) {
			exec(List.of(IP, "netns", "del", probe));
		}
		assumeTrue(made.status() == 0, "network namespace tests: this machine refuses to make a network namespace ("
				+ "`ip netns add` exited " + made.status() + ": " + made.output().strip() + ")");
	}

	/**
	 * Makes the switch and one host per name, each link up with the given MTU.
	 *
	 * @param mtu MTU of every link
	 * @param names the hosts (lower-case letters, at most 15 characters: they name the switch ports)
	 */
	static NetnsHosts create(int mtu, String... names) {
		return create(mtu, 1, names);
	}

	/**
	 * Makes one switch bridge per interface and one host per name, each with {@code nics} interfaces, every link up
	 * with the given MTU.
	 *
	 * @param nics interfaces per host, 1..9: {@code eth0} .. on subnets {@code 10.203.0.0/24} ..
	 * @param names the hosts (lower-case letters, at most 13 characters with several interfaces)
	 */
	static NetnsHosts create(int mtu, int nics, String... names) {
		NetnsHosts net = new NetnsHosts(newPrefix());
		try {
			net.build(mtu, nics, names);
			return net;
		}
		catch (RuntimeException | Error e) {
			try {
				net.close();
			}
			catch (RuntimeException suppressed) {
				e.addSuppressed(suppressed);
			}
			throw e;
		}
	}

	private void build(int mtu, int nics, String... names) {
		if (nics < 1 || nics > 9) {
			throw new IllegalArgumentException("nics : " + nics + " (expected: 1..9)");
		}
		this.nics = nics;
		addNamespace(switchNs);
		for (int k = 0; k < nics; k++) {
			run(IP, "-n", switchNs, "link", "add", "br" + k, "type", "bridge");
			run(IP, "-n", switchNs, "link", "set", "br" + k, "up");
		}
		String longest = nics == 1 ? "14" : "12";
		for (String name : names) {
			if (!name.matches("[a-z][a-z0-9]{0," + longest + "}") || hosts.containsKey(name)) {
				throw new IllegalArgumentException("host name : " + name + " (expected: unique, a lower-case letter "
						+ "then up to " + longest + " letters or digits)");
			}
			Host host = new Host(name, prefix + "-" + name, SUBNET + "0." + (FIRST_HOST + hosts.size()), hosts.size());
			addNamespace(host.namespace());
			run(IP, "-n", host.namespace(), "link", "set", "lo", "up");
			for (int k = 0; k < nics; k++) {
				// Made in the switch: the port's name only has to be unique there, the host's end is ethK in its own.
				String port = port(host, k);
				String nic = nic(k);
				run(IP, "-n", switchNs, "link", "add", port, "mtu", String.valueOf(mtu), "type", "veth", "peer",
						"name", nic, "mtu", String.valueOf(mtu), "netns", host.namespace());
				run(IP, "-n", switchNs, "link", "set", port, "master", "br" + k, "up");
				run(IP, "-n", host.namespace(), "addr", "add", address(host, k) + "/24", "dev", nic);
				run(IP, "-n", host.namespace(), "link", "set", nic, "up");
			}
			hosts.put(name, host);
		}
		for (Host host : hosts.values()) {
			for (int k = 0; k < nics; k++) {
				awaitOperstate(host, k, "UP");
			}
		}
	}

	/** @return the host's interface {@code k}: {@code eth0}, {@code eth1}, ... */
	static String nic(int k) {
		return "eth" + k;
	}

	// The switch's end of the host's interface k: the host's name for eth0, as with one interface.
	private static String port(Host host, int k) {
		return k == 0 ? host.name() : host.name() + "-" + k;
	}

	private static String address(Host host, int k) {
		return SUBNET + k + "." + (FIRST_HOST + host.index());
	}

	private void addNamespace(String namespace) {
		made.add(namespace);
		run(IP, "netns", "add", namespace);
	}

	/** @return the host's address on the subnet of {@code eth0} */
	String address(String host) {
		return host(host).address();
	}

	/** @return the host's address on the subnet of its interface {@code k} */
	String address(String host, int k) {
		return address(host(host), checked(host, k));
	}

	private int checked(String host, int k) {
		if (k < 0 || k >= nics) {
			throw new IllegalArgumentException("interface : " + k + " of " + host + " (expected: 0.." + (nics - 1) + ")");
		}
		return k;
	}

	/**
	 * Starts {@code kvferry args...} on the host, in a JVM inside its namespace, without the environment variables
	 * that would override address detection.
	 */
	Child start(String host, String name, String... args) throws IOException, URISyntaxException {
		return CliChild.start(name, List.of(IP, "netns", "exec", host(host).namespace()), ADDRESS_ENV, args);
	}

	/** Unplugs the host's cable at the switch: its eth0 stays configured but loses its carrier (reports DOWN). */
	void cutLink(String host) {
		cutLink(host, 0);
	}

	/** Unplugs the cable of the host's interface {@code k} at the switch. */
	void cutLink(String host, int k) {
		run(IP, "-n", switchNs, "link", "set", port(host(host), checked(host, k)), "down");
		awaitOperstate(host(host), k, "DOWN");
	}

	/** Plugs the host's cable back in. */
	void restoreLink(String host) {
		run(IP, "-n", switchNs, "link", "set", host(host).name(), "up");
		awaitOperstate(host(host), 0, "UP");
	}

	/** Caps what the host sends at {@code bitsPerSecond} (a token bucket on its eth0; what it receives is not capped). */
	void capEgress(String host, long bitsPerSecond) {
		capEgress(host, 0, bitsPerSecond);
	}

	/** Caps what the host sends on its interface {@code k} at {@code bitsPerSecond}. */
	void capEgress(String host, int k, long bitsPerSecond) {
		run(IP, "netns", "exec", host(host).namespace(), TC, "qdisc", "replace", "dev", nic(checked(host, k)), "root",
				"tbf", "rate", bitsPerSecond + "bit", "burst", TBF_BURST, "latency", "100ms");
	}

	/** @return the host's established TCP connections, as {@code ss -Htn} prints them */
	String connections(String host) {
		return run(IP, "netns", "exec", host(host).namespace(), SS, "-Htn", "state", "established");
	}

	/** @return the local ports of the connections in {@code ss} output to {@code peerPort} on {@code peerAddress} */
	static List<Integer> establishedPorts(String ssOutput, String peerAddress, int peerPort) {
		List<Integer> ports = new ArrayList<>();
		for (String line : ssOutput.lines().toList()) {
			// "Recv-Q Send-Q local:port peer:port"
			List<String> ends = List.of(line.trim().split("\\s+")).stream().filter(t -> t.contains(":")).toList();
			// IPv4 peers may show as "[::ffff:a.b.c.d]:port" on a dual-stack socket.
			String peer = ends.size() >= 2 ? ends.get(1).replace("[::ffff:", "").replace("]", "") : "";
			if (peer.equals(peerAddress + ":" + peerPort)) {
				String local = ends.get(0);
				ports.add(Integer.parseInt(local.substring(local.lastIndexOf(':') + 1)));
			}
		}
		return ports;
	}

	/**
	 * Drops every packet of the TCP flows between {@code host}'s {@code localPorts} and {@code peer}, both ways,
	 * silently (no reset, no ICMP), as a middlebox that forgot the flows does: each host's egress sends them to a class
	 * whose queue holds nothing. Flows from other ports, new connections included, pass. (Filters on egress only, and
	 * a zero-length queue rather than a drop action: that much works in containers whose kernels lack the rest.)
	 */
	void dropFlows(String host, String peer, List<Integer> localPorts) {
		blackhole(host(host).namespace(), "sport", localPorts);
		blackhole(host(peer).namespace(), "dport", localPorts);
	}

	private void blackhole(String ns, String field, List<Integer> ports) {
		// Everything else goes to class 1:1, uncapped for what these tests move.
		run(IP, "netns", "exec", ns, TC, "qdisc", "replace", "dev", NIC, "root", "handle", "1:", "htb", "default", "1");
		run(IP, "netns", "exec", ns, TC, "class", "add", "dev", NIC, "parent", "1:", "classid", "1:1", "htb", "rate",
				"10gbit");
		run(IP, "netns", "exec", ns, TC, "class", "add", "dev", NIC, "parent", "1:", "classid", "1:2", "htb", "rate",
				"8kbit");
		run(IP, "netns", "exec", ns, TC, "qdisc", "add", "dev", NIC, "parent", "1:2", "handle", "20:", "pfifo", "limit",
				"0");
		for (int port : ports) {
			run(IP, "netns", "exec", ns, TC, "filter", "add", "dev", NIC, "parent", "1:", "protocol", "ip", "prio", "1",
					"u32", "match", "ip", field, String.valueOf(port), "0xffff", "flowid", "1:2");
		}
	}

	/** @return dropped packets on the host's eth0 so far, as its queues count them */
	long droppedPackets(String host) {
		String out = run(IP, "netns", "exec", host(host).namespace(), TC, "-s", "qdisc", "show", "dev", NIC);
		long dropped = 0;
		Matcher m = Pattern.compile("dropped (\\d+)").matcher(out);
		while (m.find()) {
			dropped += Long.parseLong(m.group(1));
		}
		return dropped;
	}

	/** @return bytes the host sent on its eth0 so far (as the interface counts them: frames with their headers) */
	long txBytes(String host) {
		return txBytes(host, 0);
	}

	/** @return bytes the host sent on its interface {@code k} so far */
	long txBytes(String host, int k) {
		JsonNode link = linkJson(host(host), checked(host, k));
		return link.path("stats64").path("tx").path("bytes").asLong();
	}

	/**
	 * Waits until the host has sent {@code bytes} on its interface {@code k} since {@code from} (a {@link #txBytes}
	 * reading): a transfer is under way there. The kernel's counter has no signal to wait on, so it is read every
	 * few milliseconds; it fails when {@code watched} ends first or nothing comes within {@code timeout}.
	 */
	void awaitSent(String host, int k, long from, long bytes, Child watched, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (txBytes(host, k) - from < bytes) {
			if (!watched.isAlive()) {
				throw new AssertionError(watched + " ended before " + bytes + " bytes left " + host + "'s " + nic(k));
			}
			if (System.nanoTime() > deadline) {
				throw new AssertionError("fewer than " + bytes + " bytes left " + host + "'s " + nic(k) + " within "
						+ timeout);
			}
			pause(host);
		}
	}

	private JsonNode linkJson(Host host, int k) {
		String out = run(IP, "-n", host.namespace(), "-j", "-s", "link", "show", "dev", nic(k));
		try {
			return JSON.readTree(out).get(0);
		}
		catch (IOException e) {
			throw new UncheckedIOException("`ip -j link show` printed no JSON: " + out, e);
		}
	}

	// The host's end reports what the test did at the switch once the kernel applied it.
	private void awaitOperstate(Host host, int k, String state) {
		long deadline = System.nanoTime() + LINK_TIMEOUT.toNanos();
		String seen;
		while (!(seen = linkJson(host, k).path("operstate").asText()).equals(state)) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError(host.name() + ": " + nic(k) + " is " + seen + ", not " + state + " within "
						+ LINK_TIMEOUT);
			}
			pause(host.name());
		}
	}

	private static void pause(String host) {
		try {
			TimeUnit.NANOSECONDS.sleep(POLL.toNanos());
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			throw new AssertionError("interrupted waiting on " + host, e);
		}
	}

	private Host host(String name) {
		Host h = hosts.get(name);
		if (h == null) {
			throw new IllegalArgumentException("host : " + name + " (expected one of " + hosts.keySet() + ")");
		}
		return h;
	}

	/**
	 * Removes every namespace this made (their links go with them), then checks that none is left.
	 *
	 * @throws IllegalStateException naming the namespaces that could not be removed
	 */
	@Override
	public void close() {
		if (!closed.compareAndSet(false, true)) {
			return;
		}
		removeAll();
		try {
			Runtime.getRuntime().removeShutdownHook(backstop);
		}
		catch (IllegalStateException e) {
			// The JVM is shutting down: the hook runs anyway and finds nothing left.
		}
		List<String> left = leftovers();
		if (!left.isEmpty()) {
			throw new IllegalStateException("network namespaces left behind: " + left);
		}
	}

	private void removeAll() {
		List<String> all;
		synchronized (made) {
			all = new ArrayList<>(made);
			made.clear();
		}
		// Hosts first, the switch last; removing a namespace destroys its end of each veth pair, and so the pair.
		Collections.reverse(all);
		for (String ns : all) {
			exec(List.of(IP, "netns", "del", ns));
		}
	}

	/** @return namespaces of this run that still exist */
	List<String> leftovers() {
		return exec(List.of(IP, "netns", "list")).output().lines()
				.map(l -> l.split(" ", 2)[0])
				.filter(n -> n.startsWith(prefix + "-"))
				.toList();
	}

	private static String newPrefix() {
		return String.format(Locale.ROOT, "kvf%08x", ThreadLocalRandom.current().nextInt());
	}

	private static String run(String... command) {
		Result r = exec(List.of(command));
		if (r.status() != 0) {
			throw new IllegalStateException("`" + String.join(" ", command) + "` exited " + r.status() + ": "
					+ r.output().strip());
		}
		return r.output();
	}

	private record Result(int status, String output) {
	}

	private static Result exec(List<String> command) {
		try {
			Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
			p.getOutputStream().close();
			byte[] out = readAll(p.getInputStream());
			if (!p.waitFor(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
				p.destroyForcibly();
				return new Result(-1, "did not end within " + COMMAND_TIMEOUT);
			}
			return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
		}
		catch (IOException e) {
			return new Result(-1, e.toString());
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
			return new Result(-1, "interrupted");
		}
	}

	private static byte[] readAll(InputStream in) throws IOException {
		ByteArrayOutputStream buf = new ByteArrayOutputStream();
		in.transferTo(buf);
		return buf.toByteArray();
	}

	// The program's absolute path, or null: root's tools live in sbin, which a non-login PATH may lack.
	private static String find(String program) {
		String path = System.getenv("PATH");
		List<String> dirs = new ArrayList<>(path == null ? List.of() : List.of(path.split(":")));
		dirs.addAll(List.of("/usr/sbin", "/sbin", "/usr/bin", "/bin"));
		return dirs.stream().filter(d -> !d.isEmpty()).map(d -> Path.of(d, program)).filter(Files::isExecutable)
				.map(Path::toString).findFirst().orElse(null);
	}

	private static String effectiveUid() {
		try {
			// "Uid:	real	effective	saved	filesystem"
			return Files.readAllLines(Path.of("/proc/self/status")).stream()
					.filter(l -> l.startsWith("Uid:"))
					.map(l -> l.split("\\s+")[2])
					.findFirst().orElse("unknown");
		}
		catch (IOException e) {
			return "unknown (" + e.getMessage() + ")";
		}
	}
}
