"""What users see: plots, widgets, the HTML report and demo, classroom labs, the study
notebooks' building blocks, and exports."""
