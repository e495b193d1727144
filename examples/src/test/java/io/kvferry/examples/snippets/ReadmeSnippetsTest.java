package io.kvferry.examples.snippets;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * README's Java snippets are the tagged regions of the example files, so the documentation cannot drift from code
 * that compiles and runs. A README block preceded by {@code <!-- snippet: path#tag -->} (path from the repository
 * root) must equal the region between {@code // tag::tag[]} and {@code // end::tag[]} in that file, modulo
 * indentation common to all its lines (tabs count as 4 spaces) and trailing spaces.
 */
class ReadmeSnippetsTest {

	// The module's tests run in examples/; README is at the repository root.
	private static final Path ROOT = Path.of("..");
	private static final Pattern MARKER = Pattern.compile("<!-- snippet: (\\S+)#(\\S+) -->");
	private static final Pattern TAG = Pattern.compile("//\\s*tag::([\\w-]+)\\[\\]");
	private static final Pattern END = Pattern.compile("//\\s*end::([\\w-]+)\\[\\]");

	@Test
	void everyMarkedReadmeBlockEqualsItsTaggedRegion() throws IOException {
		Map<String, String> blocks = markedBlocks(Files.readString(ROOT.resolve("README.md")));

		assertThat(blocks).as("README's snippets taken from the examples")
				.containsKeys(
						"examples/src/main/java/io/kvferry/examples/snippets/FirstRoom.java#library-in-short",
						"examples/src/main/java/io/kvferry/examples/snippets/Cache.java#kv-args");
		blocks.forEach((ref, block) -> {
			String file = ref.substring(0, ref.indexOf('#'));
			String tag = ref.substring(ref.indexOf('#') + 1);
			Map<String, String> regions = regions(read(file));
			assertThat(regions).as("tags in %s", file).containsKey(tag);
			assertThat(block).as("README block marked %s", ref).isEqualTo(regions.get(tag));
		});
	}

	@Test
	void everyMarkedBlockOfTheDocsPagesEqualsItsTaggedRegion() throws IOException {
		Map<String, String> blocks = new LinkedHashMap<>();
		try (var pages = Files.walk(ROOT.resolve("docs"))) {
			for (Path page : pages.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
				blocks.putAll(markedBlocks(Files.readString(page)));
			}
		}

		assertThat(blocks).as("the docs pages' snippets taken from the examples").containsKeys(
				"examples/src/main/java/io/kvferry/examples/snippets/WatchStates.java#watch-states",
				"examples/src/main/java/io/kvferry/examples/snippets/LayerwiseSends.java#layerwise-sends");
		blocks.forEach((ref, block) -> {
			String file = ref.substring(0, ref.indexOf('#'));
			String tag = ref.substring(ref.indexOf('#') + 1);
			assertThat(block).as("docs block marked %s", ref).isEqualTo(regions(read(file)).get(tag));
		});
	}

	@Test
	void everyTagInTheExamplesIsClosedAndUnique() throws IOException {
		try (var files = Files.list(Path.of("src/main/java/io/kvferry/examples/snippets"))) {
			for (Path f : files.toList()) {
				regions(Files.readString(f));
			}
		}
	}

	@Test
	void regionsAreComparedWithoutTheirCommonIndentation() {
		String source = "class A {\n\tvoid f() {\n\t\t// tag::t[]\n\t\tint a = 1;\n\t\tif (a > 0) {\n\t\t\ta++;   \n"
				+ "\t\t}\n\t\t// end::t[]\n\t}\n}\n";

		assertThat(regions(source)).containsEntry("t", "int a = 1;\nif (a > 0) {\n    a++;\n}");
		assertThat(markedBlocks("text\n<!-- snippet: A.java#t -->\n```java\n  int a = 1;\n```\n"))
				.containsEntry("A.java#t", "int a = 1;");
	}

	private static String read(String file) {
		try {
			return Files.readString(ROOT.resolve(file));
		}
		catch (IOException e) {
			throw new AssertionError("README names " + file + ", which cannot be read", e);
		}
	}

	// Marked ```java blocks of a Markdown text, by "path#tag"; a marker must be followed by a java block.
	static Map<String, String> markedBlocks(String markdown) {
		Map<String, String> blocks = new LinkedHashMap<>();
		List<String> lines = markdown.lines().toList();
		for (int i = 0; i < lines.size(); i++) {
			Matcher m = MARKER.matcher(lines.get(i).strip());
			if (!m.matches()) {
				continue;
			}
			String ref = m.group(1) + "#" + m.group(2);
			assertThat(i + 1 < lines.size() ? lines.get(i + 1).strip() : "")
					.as("the line after the marker %s", ref).isEqualTo("```java");
			List<String> body = new ArrayList<>();
			int j = i + 2;
			while (j < lines.size() && !lines.get(j).strip().equals("```")) {
				body.add(lines.get(j));
				j++;
			}
			assertThat(j).as("the end of the block marked %s", ref).isLessThan(lines.size());
			assertThat(blocks.put(ref, normalized(body))).as("a second block marked %s", ref).isNull();
			i = j;
		}
		return blocks;
	}

	// Tagged regions of a source file, by tag; every tag must be closed once, after it opened, and not reused.
	static Map<String, String> regions(String source) {
		Map<String, String> regions = new LinkedHashMap<>();
		Map<String, List<String>> open = new LinkedHashMap<>();
		for (String line : source.lines().toList()) {
			Matcher tag = TAG.matcher(line);
			Matcher end = END.matcher(line);
			if (tag.find()) {
				assertThat(open.put(tag.group(1), new ArrayList<>())).as("tag %s opened twice", tag.group(1)).isNull();
				assertThat(regions).as("tag %s used twice", tag.group(1)).doesNotContainKey(tag.group(1));
			}
			else if (end.find()) {
				List<String> body = open.remove(end.group(1));
				assertThat(body).as("end of tag %s that is not open", end.group(1)).isNotNull();
				regions.put(end.group(1), normalized(body));
			}
			else {
				open.values().forEach(body -> body.add(line));
			}
		}
		assertThat(open).as("tags never closed").isEmpty();
		return regions;
	}

	private static String normalized(List<String> lines) {
		List<String> expanded = lines.stream().map(l -> l.replace("\t", "    ").stripTrailing()).toList();
		int indent = expanded.stream().filter(l -> !l.isEmpty())
				.mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
		List<String> body = new ArrayList<>(expanded.stream().map(l -> l.isEmpty() ? l : l.substring(indent)).toList());
		while (!body.isEmpty() && body.get(0).isEmpty()) {
			body.remove(0);
		}
		while (!body.isEmpty() && body.get(body.size() - 1).isEmpty()) {
			body.remove(body.size() - 1);
		}
		return String.join("\n", body);
	}
}
