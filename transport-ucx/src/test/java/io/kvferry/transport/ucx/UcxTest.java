package io.kvferry.transport.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** What a user reads where UCX cannot be loaded: the missing library by name, and how to install it. */
class UcxTest {

	@Test
	void theLibraryTheLoaderCouldNotFindIsNamedWithTheFix() {
		String jucx = "Native code library failed to load: libjucx_amd64.so. /tmp/jucx1/libjucx_amd64.so: libucp.so.0: "
				+ "cannot open shared object file: No such file or directory";
		assertThat(Ucx.describe(new UnsatisfiedLinkError(jucx))).isEqualTo("UCX is not installed here: libucp.so.0 "
				+ "cannot be loaded (cannot open shared object file); JUCX needs the system's UCX 1.13 or newer: "
				+ "apt-get install libucx0 on Debian and Ubuntu");
		// A library of the name the loader found and could not load: the path it names is not the reason.
		assertThat(Ucx.describe(new UnsatisfiedLinkError("/tmp/jucx2/libjucx_amd64.so: /opt/ucx/lib/libucp.so.0: "
				+ "file too short"))).startsWith("UCX is not installed here: libucp.so.0 cannot be loaded (file too "
						+ "short)");
		// As JUCX's class initializer reports it.
		assertThat(Ucx.describe(new ExceptionInInitializerError(new UnsatisfiedLinkError("/tmp/x/libjucx_amd64.so: "
				+ "libucs.so.0: file too short")))).startsWith("UCX is not installed here: libucs.so.0 cannot be "
						+ "loaded (file too short)");
		assertThat(Ucx.describe(new IllegalStateException("no device"))).isEqualTo("UCX is not usable here ("
				+ "java.lang.IllegalStateException: no device); JUCX needs the system's UCX 1.13 or newer: apt-get "
				+ "install libucx0 on Debian and Ubuntu");
	}
}
