package io.kvferry.spi;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** {@link NativeMemory#unmap} releases a mapping at once: the process's memory map no longer lists the file. */
class NativeMemoryUnmapTest {

	private static final Path MAPS = Path.of("/proc/self/maps");

	@Test
	void unmapReleasesTheMappingNow(@TempDir Path dir) throws IOException {
		assumeTrue(Files.isReadable(MAPS), "needs /proc/self/maps to see the process's mappings");
		Path file = dir.resolve("ring");
		MappedByteBuffer map;
		try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
				StandardOpenOption.WRITE)) {
			map = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096);
		}
		map.put(0, (byte) 1);
		String path = file.toRealPath().toString();
		assertThat(Files.readString(MAPS)).contains(path);

		NativeMemory.unmap(map);

		// The buffer is still reachable here: only an unmapping done now, not by the collector, removes the line.
		assertThat(Files.readString(MAPS)).doesNotContain(path);
		assertThat(map.capacity()).isEqualTo(4096);
	}
}
