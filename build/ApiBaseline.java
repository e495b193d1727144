import java.io.IOException;
import java.lang.annotation.Annotation;
import java.lang.reflect.AnnotatedArrayType;
import java.lang.reflect.AnnotatedParameterizedType;
import java.lang.reflect.AnnotatedType;
import java.lang.reflect.AnnotatedTypeVariable;
import java.lang.reflect.AnnotatedWildcardType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The API baseline check of one module: lists the module's public API from its compiled classes and compares the
 * listing with the module's checked-in file, failing on any difference; with {@code accept} it rewrites the file
 * instead. The API is every public type outside {@code internal} packages (and protected nested types), with its
 * public and protected constructors, methods and fields (protected ones only where a user can subclass), their
 * generic signatures and type-use annotations ({@code @Nullable}), one line each, sorted, so that a change is a
 * one-line diff of the file.
 *
 * <p>Run by Maven in each published module's verify phase, as a single-file source program
 * ({@code java -cp <module classpath> build/ApiBaseline.java <module> <classes dir> <api file> <accept>}). Classes
 * are loaded without being initialized, from the module's compile class path.
 */
public final class ApiBaseline {

	private static final String ACCEPT_HINT = "-Dkvferry.api.accept";

	public static void main(String[] args) throws IOException {
		if (args.length != 4) {
			System.err.println("usage: ApiBaseline <module> <classes dir> <api file> <accept: true|false>");
			System.exit(2);
		}
		String module = args[0];
		Path classes = Path.of(args[1]);
		Path file = Path.of(args[2]);
		boolean accept = args[3].isEmpty() || Boolean.parseBoolean(args[3]);
		String listing = listing(module, classes);
		String display = Path.of("").toAbsolutePath().relativize(file.toAbsolutePath()).toString();
		if (accept) {
			String before = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : null;
			if (!listing.equals(before)) {
				Files.createDirectories(file.toAbsolutePath().getParent());
				Files.writeString(file, listing, StandardCharsets.UTF_8);
				System.out.println("[api] " + module + ": wrote " + display + "; review and commit its diff");
			}
			return;
		}
		if (!Files.exists(file)) {
			fail(module, display, "no API baseline at " + display, List.of());
		}
		String recorded = Files.readString(file, StandardCharsets.UTF_8);
		if (!listing.equals(recorded)) {
			fail(module, display, "the public API differs from " + display + " (+ new, - gone)",
					difference(blocks(recorded), blocks(listing)));
		}
		System.out.println("[api] " + module + ": public API matches " + display);
	}

	private static void fail(String module, String file, String what, List<String> lines) {
		StringBuilder b = new StringBuilder("[api] " + module + ": " + what + "\n");
		lines.forEach(l -> b.append("  ").append(l).append('\n'));
		b.append("[api] If the change is intended, accept it with `mvn verify ").append(ACCEPT_HINT)
				.append("` (add -pl <module> -am for one module), which rewrites ").append(file)
				.append("; then commit that file with the change, so that its diff is reviewed.\n")
				.append("[api] If it is not, make the type or member non-public, or move it to an internal package.");
		System.err.println(b);
		System.exit(1);
	}

	/** @return the file's text: a header, then one block per type (its declaration, then its members, indented) */
	static String listing(String module, Path classes) throws IOException {
		StringBuilder b = new StringBuilder();
		b.append("# Public API of ").append(module).append(": public types outside internal packages and their public\n")
				.append("# and protected members. Checked by `mvn verify`; rewritten by `mvn verify ").append(ACCEPT_HINT)
				.append("`.\n");
		for (Class<?> type : types(classes)) {
			b.append('\n').append(declaration(type)).append('\n');
			for (String member : members(type)) {
				b.append('\t').append(member).append('\n');
			}
		}
		return b.toString();
	}

	private static List<Class<?>> types(Path classes) throws IOException {
		if (!Files.isDirectory(classes)) {
			return List.of();
		}
		List<String> names;
		try (Stream<Path> files = Files.walk(classes)) {
			names = files.map(p -> classes.relativize(p).toString())
					.filter(n -> n.endsWith(".class") && !n.endsWith("package-info.class")
							&& !n.endsWith("module-info.class"))
					.map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.').replace('\\', '.'))
					.sorted()
					.collect(Collectors.toList());
		}
		ClassLoader loader = ApiBaseline.class.getClassLoader();
		List<Class<?>> api = new ArrayList<>();
		for (String name : names) {
			if (Arrays.asList(name.split("\\.")).contains("internal")) {
				continue;
			}
			try {
				Class<?> type = Class.forName(name, false, loader);
				if (isApi(type)) {
					api.add(type);
				}
			}
			catch (ClassNotFoundException | LinkageError e) {
				throw new IllegalStateException("cannot load " + name + " from the module's class path: " + e, e);
			}
		}
		api.sort((x, y) -> x.getName().compareTo(y.getName()));
		return api;
	}

	/** A type a user can name: public, or protected and nested, in a type a user can name. */
	private static boolean isApi(Class<?> type) {
		if (type.isSynthetic() || type.isAnonymousClass() || type.isLocalClass()) {
			return false;
		}
		int m = type.getModifiers();
		Class<?> outer = type.getDeclaringClass();
		if (outer == null) {
			return Modifier.isPublic(m);
		}
		return (Modifier.isPublic(m) || Modifier.isProtected(m) && subclassable(outer)) && isApi(outer);
	}

	/** Whether a user's class can extend it, and so see its protected members. */
	private static boolean subclassable(Class<?> type) {
		if (type.isInterface() || Modifier.isFinal(type.getModifiers()) || type.isSealed()) {
			return false;
		}
		return Arrays.stream(type.getDeclaredConstructors())
				.anyMatch(c -> Modifier.isPublic(c.getModifiers()) || Modifier.isProtected(c.getModifiers()));
	}

	private static String declaration(Class<?> type) {
		StringBuilder b = new StringBuilder();
		int mask = Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC | Modifier.FINAL | Modifier.ABSTRACT;
		int m = type.getModifiers() & mask;
		String kind;
		if (type.isAnnotation()) {
			kind = "@interface";
			m &= ~(Modifier.ABSTRACT | Modifier.STATIC);
		}
		else if (type.isInterface()) {
			kind = "interface";
			m &= ~(Modifier.ABSTRACT | Modifier.STATIC);
		}
		else if (type.isEnum()) {
			kind = "enum";
			m &= ~(Modifier.FINAL | Modifier.STATIC | Modifier.ABSTRACT);
		}
		else if (type.isRecord()) {
			kind = "record";
			m &= ~(Modifier.FINAL | Modifier.STATIC);
		}
		else {
			kind = "class";
		}
		b.append(Modifier.toString(m));
		if (type.isSealed()) {
			b.append(" sealed");
		}
		b.append(' ').append(kind).append(' ').append(name(type)).append(typeParameters(type.getTypeParameters()));
		AnnotatedType superclass = type.getAnnotatedSuperclass();
		if (superclass != null && !type.isEnum() && !type.isRecord() && superclass.getType() != Object.class) {
			b.append(" extends ").append(format(superclass));
		}
		AnnotatedType[] interfaces = type.getAnnotatedInterfaces();
		if (interfaces.length > 0) {
			b.append(type.isInterface() ? " extends " : " implements ")
					.append(Arrays.stream(interfaces).map(ApiBaseline::format).collect(Collectors.joining(", ")));
		}
		if (type.isSealed()) {
			b.append(" permits ").append(Arrays.stream(type.getPermittedSubclasses()).map(ApiBaseline::name)
					.sorted().collect(Collectors.joining(", ")));
		}
		return b.toString();
	}

	/**
	 * @return the type's public members and, where a user can subclass it, protected ones: its own and those it
	 *         inherits from superclasses a user cannot name (which it exposes as its own), sorted
	 */
	private static List<String> members(Class<?> type) {
		boolean seesProtected = subclassable(type);
		Map<String, String> bySignature = new LinkedHashMap<>();
		Map<String, String> names = new LinkedHashMap<>();
		// By name, then by the whole line: a member's overloads stay together.
		TreeMap<String, String> fields = new TreeMap<>();
		TreeSet<String> constructors = new TreeSet<>();
		for (Class<?> c = type; c != null && (c == type || !isApi(c)) && c != Object.class; c = c.getSuperclass()) {
			for (Field f : c.getDeclaredFields()) {
				if (visible(f, seesProtected) && !f.isSynthetic()) {
					fields.putIfAbsent(f.getName(), modifiers(f.getModifiers(), type) + format(f.getAnnotatedType()) + " "
							+ f.getName());
				}
			}
			if (c == type) {
				for (Constructor<?> k : c.getDeclaredConstructors()) {
					if (visible(k, seesProtected) && !k.isSynthetic()) {
						constructors.add(modifiers(k.getModifiers(), type) + typeParameters(k.getTypeParameters())
								+ type.getSimpleName() + "(" + parameters(k) + ")" + exceptions(k));
					}
				}
			}
			for (Method method : c.getDeclaredMethods()) {
				if (visible(method, seesProtected) && !method.isSynthetic() && !method.isBridge()) {
					String key = method.getName() + Arrays.toString(method.getParameterTypes());
					bySignature.putIfAbsent(key, method(method, type));
					names.put(key, method.getName());
				}
			}
		}
		List<String> all = new ArrayList<>(fields.values());
		all.addAll(constructors);
		TreeMap<String, String> methods = new TreeMap<>();
		bySignature.forEach((key, line) -> methods.put(names.get(key) + " " + line, line));
		all.addAll(methods.values());
		return all;
	}

	private static boolean visible(Member member, boolean seesProtected) {
		int m = member.getModifiers();
		return Modifier.isPublic(m) || seesProtected && Modifier.isProtected(m);
	}

	private static String method(Method method, Class<?> owner) {
		int m = method.getModifiers();
		String prefix = modifiers(m, owner);
		if (method.isDefault()) {
			prefix += "default ";
		}
		String generics = typeParameters(method.getTypeParameters());
		return prefix + (generics.isEmpty() ? "" : generics + " ") + format(method.getAnnotatedReturnType()) + " "
				+ method.getName() + "(" + parameters(method) + ")" + exceptions(method);
	}

	/** Modifiers that matter to a caller; {@code abstract} and {@code public} are implied on interface members. */
	private static String modifiers(int m, Class<?> owner) {
		int mask = Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC | Modifier.FINAL | Modifier.ABSTRACT;
		int shown = m & mask;
		if (owner.isInterface()) {
			shown &= ~(Modifier.ABSTRACT | Modifier.PUBLIC);
			if (Modifier.isStatic(m) && Modifier.isFinal(m)) {
				shown &= ~(Modifier.STATIC | Modifier.FINAL);
			}
		}
		String text = Modifier.toString(shown);
		return text.isEmpty() ? "" : text + " ";
	}

	private static String parameters(Executable e) {
		AnnotatedType[] types = e.getAnnotatedParameterTypes();
		List<String> out = new ArrayList<>();
		for (int i = 0; i < types.length; i++) {
			String t = format(types[i]);
			if (e.isVarArgs() && i == types.length - 1 && t.endsWith("[]")) {
				t = t.substring(0, t.length() - 2) + "...";
			}
			out.add(t);
		}
		return String.join(", ", out);
	}

	private static String exceptions(Executable e) {
		AnnotatedType[] thrown = e.getAnnotatedExceptionTypes();
		return thrown.length == 0 ? ""
				: " throws " + Arrays.stream(thrown).map(ApiBaseline::format).sorted().collect(Collectors.joining(", "));
	}

	private static String typeParameters(TypeVariable<?>[] variables) {
		if (variables.length == 0) {
			return "";
		}
		List<String> out = new ArrayList<>();
		for (TypeVariable<?> v : variables) {
			String bounds = Arrays.stream(v.getAnnotatedBounds()).filter(t -> t.getType() != Object.class
					|| t.getAnnotations().length > 0).map(ApiBaseline::format).collect(Collectors.joining(" & "));
			out.add(annotations(v.getAnnotations()) + v.getName() + (bounds.isEmpty() ? "" : " extends " + bounds));
		}
		return "<" + String.join(", ", out) + ">";
	}

	/** A type as source would write it, with its type-use annotations ({@code @Nullable}) where they stand. */
	static String format(AnnotatedType t) {
		String annotations = annotations(t.getAnnotations());
		if (t instanceof AnnotatedArrayType a) {
			return format(a.getAnnotatedGenericComponentType()) + (annotations.isEmpty() ? "" : " " + annotations.trim())
					+ "[]";
		}
		if (t instanceof AnnotatedParameterizedType p) {
			Type raw = ((ParameterizedType) p.getType()).getRawType();
			return annotations + name(raw) + "<" + Arrays.stream(p.getAnnotatedActualTypeArguments())
					.map(ApiBaseline::format).collect(Collectors.joining(", ")) + ">";
		}
		if (t instanceof AnnotatedWildcardType w) {
			AnnotatedType[] lower = w.getAnnotatedLowerBounds();
			if (lower.length > 0) {
				return annotations + "? super " + format(lower[0]);
			}
			AnnotatedType[] upper = w.getAnnotatedUpperBounds();
			boolean unbounded = upper.length == 0 || upper[0].getType() == Object.class
					&& upper[0].getAnnotations().length == 0;
			return annotations + "?" + (unbounded ? "" : " extends " + format(upper[0]));
		}
		if (t instanceof AnnotatedTypeVariable v) {
			return annotations + v.getType().getTypeName();
		}
		return annotations + name(t.getType());
	}

	/** @return a type's name as source writes it: {@code io.kvferry.KVArgs.Builder}, not {@code KVArgs$Builder} */
	private static String name(Type type) {
		if (type instanceof Class<?> c && c.getCanonicalName() != null) {
			return c.getCanonicalName();
		}
		return type.getTypeName();
	}

	private static String annotations(Annotation[] annotations) {
		StringBuilder b = new StringBuilder();
		for (Annotation a : annotations) {
			b.append('@').append(a.annotationType().getSimpleName()).append(' ');
		}
		return b.toString();
	}

	/** @return the listing's blocks: each type's declaration line mapped to its member lines */
	private static Map<String, TreeSet<String>> blocks(String listing) {
		Map<String, TreeSet<String>> blocks = new TreeMap<>();
		TreeSet<String> current = null;
		for (String line : listing.split("\n")) {
			if (line.isEmpty() || line.startsWith("#")) {
				continue;
			}
			if (line.startsWith("\t")) {
				if (current != null) {
					current.add(line.substring(1));
				}
			}
			else {
				current = new TreeSet<>();
				blocks.put(line, current);
			}
		}
		return blocks;
	}

	/** @return what changed, type by type: whole types added or removed, else the members added and removed */
	private static List<String> difference(Map<String, TreeSet<String>> before, Map<String, TreeSet<String>> after) {
		Map<String, String> beforeByName = byName(before);
		Map<String, String> afterByName = byName(after);
		TreeSet<String> names = new TreeSet<>(beforeByName.keySet());
		names.addAll(afterByName.keySet());
		List<String> out = new ArrayList<>();
		for (String name : names) {
			String was = beforeByName.get(name);
			String is = afterByName.get(name);
			if (was == null) {
				out.add("+ " + is);
				continue;
			}
			if (is == null) {
				out.add("- " + was);
				continue;
			}
			List<String> changes = new ArrayList<>();
			if (!was.equals(is)) {
				changes.add("- " + was);
				changes.add("+ " + is);
			}
			TreeSet<String> gone = new TreeSet<>(before.get(was));
			gone.removeAll(after.get(is));
			TreeSet<String> added = new TreeSet<>(after.get(is));
			added.removeAll(before.get(was));
			gone.forEach(m -> changes.add("  - " + m));
			added.forEach(m -> changes.add("  + " + m));
			if (!changes.isEmpty()) {
				if (was.equals(is)) {
					out.add(name);
				}
				out.addAll(changes);
			}
		}
		if (out.isEmpty()) {
			out.add("(only the order or the header differs)");
		}
		return out;
	}

	/** @return each block's declaration by the type's name (the word after the kind) */
	private static Map<String, String> byName(Map<String, TreeSet<String>> blocks) {
		Map<String, String> out = new TreeMap<>();
		for (String declaration : blocks.keySet()) {
			out.put(typeName(declaration), declaration);
		}
		return out;
	}

	private static String typeName(String declaration) {
		String[] words = declaration.split(" ");
		for (int i = 0; i < words.length - 1; i++) {
			if (List.of("class", "interface", "enum", "record", "@interface").contains(words[i])) {
				String name = words[i + 1];
				int generic = name.indexOf('<');
				return generic < 0 ? name : name.substring(0, generic);
			}
		}
		return declaration;
	}
}
