package io.kvferry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine's classes point one way, read from the compiled classes with jdeps (generic signatures count, nested
 * classes fold into their file's class): the rooms, sessions and destinations reach their manager only through the
 * support object it hands them, the only loop between classes of the engine's package is a room and its table, and the
 * stripe package uses nothing of the engine.
 */
class EngineStructureTest {

	private static final String ENGINE = "io.kvferry.internal";
	private static final String STRIPE = "io.kvferry.internal.stripe";
	private static final Pattern EDGE = Pattern.compile("^\\s+(\\S+)\\s+->\\s+(\\S+)");
	// Class -> the classes it uses, both as top-level names.
	private static final Map<String, Set<String>> USES = new TreeMap<>();

	@BeforeAll
	static void readClasses() throws URISyntaxException {
		Path classes = Path.of(Room.class.getProtectionDomain().getCodeSource().getLocation().toURI());
		StringWriter out = new StringWriter();
		int rc = ToolProvider.findFirst("jdeps").orElseThrow()
				.run(new PrintWriter(out), new PrintWriter(new StringWriter()), "-filter:none", "-verbose:class",
						classes.toString());
		assertThat(rc).as("jdeps over %s", classes).isZero();
		for (String line : out.toString().split("\n")) {
			Matcher m = EDGE.matcher(line);
			if (m.find()) {
				String from = top(m.group(1));
				String to = top(m.group(2));
				Set<String> uses = USES.computeIfAbsent(from, k -> new TreeSet<>());
				if (!from.equals(to)) {
					uses.add(to);
				}
			}
		}
		assertThat(USES).as("the engine's classes were read").containsKey(ENGINE + ".Room");
	}

	private static String top(String name) {
		int nested = name.indexOf('$');
		return nested < 0 ? name : name.substring(0, nested);
	}

	private static String pkg(String name) {
		return name.substring(0, name.lastIndexOf('.'));
	}

	@Test
	void theOnlyLoopBetweenEngineClassesIsARoomAndItsTable() {
		assertThat(loops(ENGINE)).containsExactly(List.of("Room", "RoomTable"));
	}

	@Test
	void noSessionRoomOrDestinationUsesItsManager() {
		for (String role : List.of("PrefillSession", "PrefillPeer", "PrefillTransfer", "PrefillDestination",
				"PrefillSupport", "DecodeSession", "DecodeRoom", "DecodeSupport", "AbortWait", "Room", "RoomTable")) {
			assertThat(USES.get(ENGINE + "." + role)).as(role).isNotNull()
					.doesNotContain(ENGINE + ".DefaultPrefillKVManager", ENGINE + ".DefaultDecodeKVManager",
							ENGINE + ".BaseKVManager");
		}
	}

	@Test
	void theStripePackageUsesNothingOfTheEngine() {
		for (Map.Entry<String, Set<String>> e : USES.entrySet()) {
			if (pkg(e.getKey()).equals(STRIPE)) {
				assertThat(e.getValue()).as(e.getKey()).noneMatch(to -> pkg(to).equals(ENGINE));
			}
		}
	}

	/** @return the strongly connected components of more than one class in {@code pkg}, by simple name, sorted */
	private static List<List<String>> loops(String pkg) {
		Map<String, Integer> index = new HashMap<>();
		Map<String, Integer> low = new HashMap<>();
		Deque<String> stack = new ArrayDeque<>();
		Set<String> onStack = new TreeSet<>();
		List<List<String>> loops = new ArrayList<>();
		for (String v : USES.keySet()) {
			if (pkg(v).equals(pkg) && !index.containsKey(v)) {
				connect(v, pkg, index, low, stack, onStack, loops);
			}
		}
		loops.sort((a, b) -> a.toString().compareTo(b.toString()));
		return loops;
	}

	private static void connect(String v, String pkg, Map<String, Integer> index, Map<String, Integer> low,
			Deque<String> stack, Set<String> onStack, List<List<String>> loops) {
		index.put(v, index.size());
		low.put(v, index.get(v));
		stack.push(v);
		onStack.add(v);
		for (String w : USES.getOrDefault(v, Set.of())) {
			if (!pkg(w).equals(pkg)) {
				continue;
			}
			if (!index.containsKey(w)) {
				connect(w, pkg, index, low, stack, onStack, loops);
				low.put(v, Math.min(low.get(v), low.get(w)));
			}
			else if (onStack.contains(w)) {
				low.put(v, Math.min(low.get(v), index.get(w)));
			}
		}
		if (low.get(v).equals(index.get(v))) {
			List<String> component = new ArrayList<>();
			String w;
			do {
				w = stack.pop();
				onStack.remove(w);
				component.add(w.substring(w.lastIndexOf('.') + 1));
			}
			while (!w.equals(v));
			if (component.size() > 1) {
				component.sort(null);
				loops.add(component);
			}
		}
	}
}
