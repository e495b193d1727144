package io.kvferry.transport.ucx;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpContext;

/**
 * Whether UCX can be used in this process: JUCX's JNI library ships in its jar, but it links against the system's
 * {@code libucp.so.0} (Debian: {@code apt-get install libucx0}).
 */
public final class Ucx {

	/**
	 * The dynamic loader's words for a library it could not load: its name, then why (a why that is a path names the
	 * library it could not load next; looked at ahead, so that the next match can start there).
	 */
	private static final Pattern MISSING = Pattern.compile("(lib[\\w.+-]+\\.so[.\\d]*): (?=([^:;/]+))");

	private static volatile @Nullable String problem;
	private static volatile boolean checked;

	private Ucx() {
	}

	/** @return whether a UCX context can be made here */
	public static boolean isAvailable() {
		return unavailabilityReason() == null;
	}

	/**
	 * @return why UCX cannot be used here (JUCX's native library or the system's UCX cannot be loaded), or
	 *         {@code null} when it can
	 */
	public static synchronized @Nullable String unavailabilityReason() {
		if (!checked) {
			checked = true;
			try {
				// JUCX loads its native library, and the system's UCX with it, as its context class initializes: no
				// context is made here (each one costs UCX's start-up, and its version warning line).
				Class.forName(UcpContext.class.getName(), true, Ucx.class.getClassLoader());
				problem = null;
			}
			catch (LinkageError | ClassNotFoundException | RuntimeException e) {
				problem = describe(e);
			}
		}
		return problem;
	}

	/** @return what a user can act on: the missing library by name where the loader named one, and how to install it */
	static String describe(Throwable e) {
		// JUCX's class initializer fails: the loader's words are in the cause.
		StringBuilder text = new StringBuilder();
		for (Throwable t = e; t != null; t = t.getCause()) {
			text.append(t.getMessage()).append("; ");
		}
		String message = text.toString();
		// The last library named is the one missing: the message names JUCX's own library first, then what it needs.
		Matcher missing = MISSING.matcher(message);
		String library = null;
		String why = null;
		while (missing.find()) {
			library = missing.group(1);
			why = missing.group(2).trim();
		}
		if (library != null) {
			return "UCX is not installed here: " + library + " cannot be loaded (" + why + "); JUCX needs the "
					+ "system's UCX 1.13 or newer: apt-get install libucx0 on Debian and Ubuntu";
		}
		return "UCX is not usable here (" + e + "); JUCX needs the system's UCX 1.13 or newer: apt-get install libucx0 "
				+ "on Debian and Ubuntu";
	}
}
