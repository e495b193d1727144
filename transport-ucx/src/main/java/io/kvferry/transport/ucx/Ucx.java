package io.kvferry.transport.ucx;

import org.jspecify.annotations.Nullable;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpParams;

/**
 * Whether UCX can be used in this process: JUCX's JNI library ships in its jar, but it links against the system's
 * {@code libucp.so.0} (Debian: {@code apt-get install libucx0}).
 */
public final class Ucx {

	private static volatile @Nullable String problem;
	private static volatile boolean checked;

	private Ucx() {
	}

	/** @return whether a UCX context can be made here */
	public static boolean isAvailable() {
		return unavailabilityReason() == null;
	}

	/**
	 * @return why UCX cannot be used here (the library is missing, or its context cannot be made), or {@code null}
	 *         when it can
	 */
	public static synchronized @Nullable String unavailabilityReason() {
		if (!checked) {
			checked = true;
			try (UcpContext probe = new UcpContext(new UcpParams().requestAmFeature())) {
				problem = null;
			}
			catch (LinkageError | RuntimeException e) {
				problem = "UCX is not usable here (install libucx0, e.g. apt-get install libucx0): " + e;
			}
		}
		return problem;
	}
}
