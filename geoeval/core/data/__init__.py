"""The authors' public datasets: the catalogue of what each holds and how its files are checked (`catalogue`), and the verified fetch into a local cache (`fetch`)."""
